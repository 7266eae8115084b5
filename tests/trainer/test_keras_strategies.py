"""Which strategy and role each job shape gets (``taas.keras.strategies``, pure: no TensorFlow), the
settings refused for TensorFlow 2 (exit 2 naming them), and one refusal end to end."""

from __future__ import annotations

import json

import pytest

from taas.core.placement import resolve_cluster
from taas.core.settings import SettingsError, TrainerSettings
from taas.keras.strategies import plan_strategy
from tests.trainer.trainer_harness import run_program


def _cluster(jobs: dict[str, int], kind: str, index: int):
    spec = {k: [f"h-{k}-{i}:2222" for i in range(n)] for k, n in jobs.items()}
    config = {"cluster": spec, "task": {"type": kind, "index": index}}
    return resolve_cluster({"TF_CONFIG": json.dumps(config)})


def _plan(jobs: dict[str, int], kind: str, index: int, gpus: int = 0, **settings):
    return plan_strategy(TrainerSettings(**settings), _cluster(jobs, kind, index), gpus)


@pytest.mark.fast
def test_one_process_default_or_mirrored() -> None:
    local = resolve_cluster({})
    assert plan_strategy(TrainerSettings(), local, 0).kind == "default"
    assert plan_strategy(TrainerSettings(), local, 1).kind == "default"
    plan = plan_strategy(TrainerSettings(), local, 4)
    assert plan.kind == "mirrored" and len(plan.devices) == 4
    plan = plan_strategy(TrainerSettings(num_towers=2), local, 4)
    assert plan.devices == ("/device:GPU:0", "/device:GPU:1")
    assert plan_strategy(TrainerSettings(num_towers=1), local, 4).kind == "default"
    plan = plan_strategy(TrainerSettings(num_towers=3), local, 0)
    assert plan.kind == "mirrored" and plan.devices[-1] == "/device:CPU:2"


@pytest.mark.fast
def test_workers_only_is_multi_worker_mirrored_and_master_becomes_chief() -> None:
    plan = _plan({"worker": 3}, "worker", 2)
    assert (plan.kind, plan.role, plan.replicas, plan.is_chief) == (
        "multi_worker_mirrored",
        "train",
        3,
        False,
    )
    plan = _plan({"master": 1, "worker": 2}, "master", 0)
    assert plan.task_type == "chief" and plan.is_chief and plan.replicas == 3
    assert set(plan.cluster_spec) == {"chief", "worker"}


@pytest.mark.fast
def test_ps_with_a_chief_coordinates_from_the_chief() -> None:
    shape = {"chief": 1, "ps": 2, "worker": 2}
    assert _plan(shape, "chief", 0).role == "coordinate"
    worker = _plan(shape, "worker", 1)
    assert (worker.role, worker.task_type, worker.task_index) == ("serve", "worker", 1)
    assert _plan(shape, "ps", 1).role == "serve"


@pytest.mark.fast
def test_ps_without_a_chief_turns_worker_0_into_the_coordinator() -> None:
    shape = {"ps": 1, "worker": 3}
    coordinator = _plan(shape, "worker", 0)
    assert (coordinator.role, coordinator.task_type, coordinator.is_chief) == (
        "coordinate",
        "chief",
        True,
    )
    assert coordinator.cluster_spec["chief"] == ["h-worker-0:2222"]
    assert coordinator.hosts("worker") == ["h-worker-1:2222", "h-worker-2:2222"]
    second = _plan(shape, "worker", 2)
    assert (second.role, second.task_type, second.task_index) == ("serve", "worker", 1)
    assert _plan({"ps": 1, "worker": 2, "evaluator": 1}, "evaluator", 0).role == "evaluate"


@pytest.mark.fast
@pytest.mark.parametrize(
    ("jobs", "kind", "settings", "message"),
    [
        ({"ps": 1, "worker": 1}, "worker", {}, "needs at least 2 workers"),
        ({"ps": 1, "chief": 1}, "chief", {}, "needs Worker replicas"),
        ({"ps": 1, "worker": 2}, "worker", {"sync": True}, "setting 'sync'.*asynchronous"),
        ({"worker": 2}, "worker", {"sync": False}, "setting 'sync'.*always synchronous"),
        ({"worker": 2}, "worker", {"num_towers": 2}, "setting 'num_towers'"),
        ({}, "worker", {"replicas_to_aggregate": 2}, "setting 'replicas_to_aggregate'"),
        ({}, "worker", {"backup_workers": 1, "sync": True}, "setting 'backup_workers'"),
        ({}, "worker", {"gpu_memory_fraction": 0.5}, "setting 'gpu_memory_fraction'"),
    ],
)
def test_settings_and_shapes_a_strategy_cannot_take(jobs, kind, settings, message) -> None:
    cluster = _cluster(jobs, kind, 0) if jobs else resolve_cluster({})
    with pytest.raises(SettingsError, match=message):
        plan_strategy(TrainerSettings(**settings), cluster, 0)


@pytest.mark.fast
def test_default_sync_is_not_a_contradiction() -> None:
    """Only a ``sync`` the user set is checked; the default false suits every strategy."""
    assert _plan({"worker": 2}, "worker", 0).kind == "multi_worker_mirrored"


@pytest.mark.fast
def test_dynamic_worker_form_is_refused() -> None:
    config = {
        "cluster": {"worker": {"1": "h:1"}, "ps": ["p:1"]},
        "task": {"type": "worker", "index": 1},
    }
    cluster = resolve_cluster({"TF_CONFIG": json.dumps(config)})
    with pytest.raises(SettingsError, match="enableDynamicWorker"):
        plan_strategy(TrainerSettings(), cluster, 0)


@pytest.mark.tensorflow
@pytest.mark.timeout(120)
def test_a_refused_setting_exits_2_naming_it() -> None:
    done = run_program(
        ["tests/trainer/programs/recording_keras.py"], {"TAAS_REPLICAS_TO_AGGREGATE": "2"}
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "setting 'replicas_to_aggregate'" in done.stderr
    assert "TAAS_REPLICAS_TO_AGGREGATE" in done.stderr
    assert "Traceback" not in done.stderr
