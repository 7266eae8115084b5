"""Every name and path users import from the trainer library still works after the move into
subpackages (``taas.core``, ``taas.runtime``, ``taas.graph``, ``taas.keras``), and the modules
documented as TensorFlow-free load without it.

Public: the names in ``taas.__all__`` (``taas.DistributedTrainer``, ``taas.KerasTrainer``,
``taas.CaicloudDistTensorflowBase``, ``taas.log_scalar``, ...), the Caicloud paths
``from taas import dist_base`` / ``from taas import entry``, and ``python -m taas.settings_doc``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import taas

PUBLIC = [
    "CaicloudDistTensorflowBase",
    "ClusterInfo",
    "DistributedTrainer",
    "ExitCode",
    "KerasTrainer",
    "SettingsError",
    "TrainerSettings",
    "log_scalar",
    "run",
]

# Documented as loading without TensorFlow: the package, the TensorFlow 2 hook class (its helpers
# import TensorFlow when called), the program entry, the strategy planner, the settings table,
# and every module of taas.core and taas.runtime.
TENSORFLOW_FREE = [
    "taas",
    "taas.keras.trainer",
    "taas.keras.hooks",
    "taas.keras.strategies",
    "taas.graph.trainer",
    "taas.graph.hooks",
    "taas.graph.exporter",
    "taas.runtime.lean_server",
    "taas.program",
    "taas.settings_doc",
    "taas.runtime.coordination",
    "taas.runtime.preflight",
    "taas.core.checkpoint_wait",
    "taas.core.placement",
    "taas.core.engine",
    "taas.core.exit_codes",
    "taas.core.flags",
    "taas.core.loop",
    "taas.core.progress_log",
    "taas.core.publish",
    "taas.core.launch",
    "taas.core.settings",
]


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.fast
def test_all_lists_exactly_the_public_names() -> None:
    assert sorted(taas.__all__) == PUBLIC


@pytest.mark.fast
def test_tensorflow_free_names_and_paths_load_without_tensorflow() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for name in {TENSORFLOW_FREE!r}: importlib.import_module(name)\n"
        "import taas\n"
        "names = [taas.KerasTrainer, taas.log_scalar, taas.run, taas.ClusterInfo, taas.ExitCode,\n"
        "         taas.SettingsError, taas.TrainerSettings, taas.DistributedTrainer,\n"
        "         taas.CaicloudDistTensorflowBase]\n"
        "print(json.dumps({'tf': sorted(m for m in sys.modules if m.split('.')[0] in\n"
        "    ('tensorflow', 'tf_keras', 'keras')), 'main': callable(taas.KerasTrainer.main)}))\n"
    )
    loaded = json.loads(_python(code))
    assert loaded == {"tf": [], "main": True}


@pytest.mark.tensorflow
def test_graph_mode_names_and_the_caicloud_paths() -> None:
    from taas import dist_base, entry
    from taas.keras.trainer import KerasTrainer

    assert taas.CaicloudDistTensorflowBase is taas.DistributedTrainer
    assert dist_base.CaicloudDistTensorflowBase is taas.DistributedTrainer
    assert dist_base.DistributedTrainer is taas.DistributedTrainer
    assert taas.KerasTrainer is KerasTrainer
    assert callable(taas.DistributedTrainer.main) and callable(entry.start)
    with pytest.raises(ValueError, match="must be subclass of CaicloudDistTensorflowBase"):
        entry.start(KerasTrainer)
    with pytest.raises(AttributeError, match="has no attribute 'Trainer'"):
        _ = taas.Trainer


@pytest.mark.fast
def test_settings_doc_runs_as_a_module_and_prints_the_docstring_table() -> None:
    from taas.settings_doc import table

    done = subprocess.run(
        [sys.executable, "-m", "taas.settings_doc"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == table() + "\n"
    assert table() in (taas.__doc__ or "")
