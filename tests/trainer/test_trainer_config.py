"""Settings and cluster resolution: pure Python, no TensorFlow, no processes."""

from __future__ import annotations

import json

import pytest

from taas.core.placement import ClusterInfo, resolve_cluster, strip_cluster_flags
from taas.core.settings import SettingsError, load_settings, parse_flags, refuse_fit_only

pytestmark = pytest.mark.fast


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith(("TAAS_", "TF_")):
            monkeypatch.delenv(key)


def test_defaults_and_taas2_env_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_MAX_STEPS", "7")
    monkeypatch.setenv("TF_LOGDIR", "/data/model")
    monkeypatch.setenv("TF_SAVE_CHECKPOINTS_SECS", "0")
    monkeypatch.setenv("TF_SAVE_SUMMARIES_STEPS", "5")
    settings, _ = load_settings([])
    assert settings.max_steps == 7
    assert settings.model_dir == "/data/model"
    assert settings.save_checkpoints_secs is None  # 0 turns time-based checkpoints off
    assert settings.save_summaries_steps == 5
    assert settings.allow_soft_placement is True


def test_precedence_flag_over_taas_env_over_tf_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_MAX_STEPS", "7")
    monkeypatch.setenv("TAAS_MAX_STEPS", "8")
    assert load_settings([])[0].max_steps == 8
    assert load_settings(["--max_steps", "9"])[0].max_steps == 9


def test_flags_leave_unknown_ones_for_the_user() -> None:
    flags, rest = parse_flags(
        ["--sync", "--export_dir=/x", "--logdir", "/m", "--nolog_device_placement"]
    )
    assert flags == {"sync": "true", "model_dir": "/m", "log_device_placement": "false"}
    assert rest == ["--export_dir=/x"]


@pytest.mark.parametrize(
    ("env", "argv", "names"),
    [
        ({"TF_MAX_STEPS": "abc"}, [], ["max_steps", "TF_MAX_STEPS"]),
        ({}, ["--max_steps=0"], ["max_steps", "--max_steps"]),
        ({"TAAS_GPU_MEMORY_FRACTION": "1.5"}, [], ["gpu_memory_fraction"]),
        ({"TAAS_VISIBLE_DEVICES": "0,a"}, [], ["visible_devices"]),
        ({"TAAS_BACKUP_WORKERS": "1"}, [], ["backup_workers", "TAAS_SYNC"]),
        ({}, ["--batch_size"], ["--batch_size"]),
    ],
)
def test_bad_values_name_the_setting(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], argv: list[str], names: list[str]
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(SettingsError) as err:
        load_settings(argv)
    for name in names:
        assert name in str(err.value)


KUBEFLOW = {
    "cluster": {"ps": ["p:2222"], "worker": ["a:2222", "b:2222"]},
    "task": {"type": "worker", "index": 1},
    "environment": "cloud",
}


def test_tf_config_kubeflow_form() -> None:
    info = resolve_cluster({"TF_CONFIG": json.dumps(KUBEFLOW)})
    assert info.distributed and not info.is_chief
    assert info.ps_tasks == [(0, "p:2222")]
    assert info.num_replicas == 2
    assert info.task_name == "worker:1"
    assert info.cluster_dict() == {"ps": ["p:2222"], "worker": ["a:2222", "b:2222"]}


def test_chief_and_master_are_chief_else_worker_0() -> None:
    for kind in ("chief", "master"):
        config = {
            "cluster": {"ps": ["p:1"], kind: ["c:1"], "worker": ["w:1"]},
            "task": {"type": kind, "index": 0},
        }
        info = resolve_cluster({"TF_CONFIG": json.dumps(config)})
        assert info.is_chief and info.num_replicas == 2
    worker0 = {**KUBEFLOW, "task": {"type": "worker", "index": 0}}
    assert resolve_cluster({"TF_CONFIG": json.dumps(worker0)}).is_chief


def test_dynamic_worker_map_and_evaluator() -> None:
    dynamic = {
        "cluster": {"ps": ["p:1"], "worker": {"3": "w3:1"}},
        "task": {"type": "worker", "index": 3},
    }
    info = resolve_cluster({"TF_CONFIG": json.dumps(dynamic)})
    assert info.dynamic and info.cluster_dict()["worker"] == {3: "w3:1"}
    evaluator = {
        **KUBEFLOW,
        "cluster": {**KUBEFLOW["cluster"], "evaluator": ["e:1"]},
        "task": {"type": "evaluator", "index": 0},
    }
    info = resolve_cluster({"TF_CONFIG": json.dumps(evaluator)})
    assert "evaluator" not in info.cluster_dict() and not info.is_chief


def test_classic_env_then_flags_then_local() -> None:
    env = {"PS_HOSTS": "p:1", "WORKER_HOSTS": "a:1,b:1", "JOB_NAME": "ps", "TASK_INDEX": "0"}
    info = resolve_cluster(env)
    assert (info.task_type, info.source, info.num_replicas) == ("ps", "env", 2)
    argv = ["--ps_hosts=p:1", "--worker_hosts", "a:1", "--job_name=worker", "--task_index=0", "--x"]
    info = resolve_cluster({}, argv)
    assert info.source == "flags" and info.is_chief
    assert strip_cluster_flags(argv) == ["--x"]
    assert resolve_cluster({}, []) == ClusterInfo()


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"TF_CONFIG": "{not json"}, "TF_CONFIG is not valid JSON"),
        ({"TF_CONFIG": json.dumps({**KUBEFLOW, "task": {"type": "boss"}})}, "task.type"),
        (
            {"TF_CONFIG": json.dumps({**KUBEFLOW, "task": {"type": "worker", "index": 5}})},
            "worker:5 is not in the cluster",
        ),
        ({"PS_HOSTS": "p:1", "JOB_NAME": "worker"}, "WORKER_HOSTS is required"),
        ({"WORKER_HOSTS": "a:1", "JOB_NAME": "worker", "TASK_INDEX": "-1"}, "TASK_INDEX"),
    ],
)
def test_bad_cluster_config_is_named(env: dict[str, str], needle: str) -> None:
    with pytest.raises(SettingsError, match=needle):
        resolve_cluster(env)


def test_max_epochs_times_steps_per_epoch_is_max_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAAS_STEPS_PER_EPOCH", "50")
    settings, _ = load_settings(["--max_epochs=4"])
    assert settings.max_steps == 200 and settings.max_epochs == 4
    agreeing, _ = load_settings(["--max_epochs=4", "--max_steps=200"])
    assert agreeing.max_steps == 200
    default, _ = load_settings([])
    assert default.max_steps == 1000 and default.max_epochs is None  # steps stay the default


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--max_epochs=3"], "max_epochs needs steps_per_epoch"),
        (
            ["--max_epochs=3", "--steps_per_epoch=10", "--max_steps=20"],
            "max_steps 20 and max_epochs 3 x steps_per_epoch 10 = 30 disagree",
        ),
        (["--validation_steps=0"], "validation_steps"),
    ],
)
def test_epoch_settings_that_cannot_hold_are_named(argv: list[str], needle: str) -> None:
    with pytest.raises(SettingsError, match=needle):
        load_settings(argv)


def test_fit_only_settings_are_refused_elsewhere() -> None:
    """Graph mode and a custom train(batch) run no fit: validation_steps, or steps_per_epoch
    without max_epochs, would do nothing there."""
    refuse_fit_only(load_settings(["--steps_per_epoch=10", "--max_epochs=2"])[0], "graph mode")
    for argv, names in (
        (["--validation_steps=2"], "validation_steps"),
        (["--steps_per_epoch=10"], "steps_per_epoch"),
    ):
        with pytest.raises(
            SettingsError, match=f"{names} mean.* not to graph mode: unset --{names}"
        ):
            refuse_fit_only(load_settings(argv)[0], "graph mode")
