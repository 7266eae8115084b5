"""A plain program's own strategy against the job's shape (issue 44: a MultiWorkerMirroredStrategy
program given `--ps 1` failed inside TensorFlow with nothing from TaaS): `taas submit` and
`taas run` warn, naming the fix, before anything runs; TaaS trainer programs are never warned."""

from __future__ import annotations

from pathlib import Path

import pytest

from taas_operator.cli import main
from taas_operator.client.programoptions import ProgramOptions
from taas_operator.client.programs import Program
from taas_operator.client.shapes import shape_warnings

MWMS = (
    "import tensorflow as tf\n"
    "strategy = tf.distribute.MultiWorkerMirroredStrategy()\n"
    "with strategy.scope():\n    model = tf.keras.Sequential()\n"
)
PSS = (
    "import tensorflow as tf\n"
    "resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()\n"
    "strategy = tf.distribute.ParameterServerStrategy(resolver)\n"
)
TAAS = "from taas import KerasTrainer\n# MultiWorkerMirroredStrategy is chosen by TaaS\n" + MWMS


def _warned(text: str, **shape: int) -> list[str]:
    return shape_warnings(Program("train.py", text), ProgramOptions(**shape))


def test_a_mirrored_program_with_parameter_servers_is_warned() -> None:
    (line,) = _warned(MWMS, workers=2, ps=1)
    assert line.startswith("warning: train.py makes a MultiWorkerMirroredStrategy")
    assert "There is no id for task_type 'ps'" in line and "fix: leave out --ps" in line
    assert _warned(MWMS, workers=2) == []


def test_a_parameter_server_program_without_one_is_warned() -> None:
    (line,) = _warned(PSS, workers=2)
    assert "has no PS" in line and "fix: add --ps 1" in line
    assert _warned(PSS, workers=2, ps=1) == []


def test_taas_trainer_programs_and_programs_naming_no_strategy_are_not() -> None:
    assert _warned(TAAS, workers=2, ps=1) == []
    assert _warned("print('hello')\n", workers=2, ps=1) == []


def test_taas_submit_says_it_before_anything_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    (tmp_path / "train.py").write_text(MWMS)
    assert main(["submit", "train.py", "--workers", "2", "--ps", "1", "--dry-run"]) == 0
    assert "warning: train.py makes a MultiWorkerMirroredStrategy" in capsys.readouterr().err
