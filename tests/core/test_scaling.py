"""The Worker count of the scale subresource (`planner.scaling`): each pass writes the worker
selector and status.workerReplicas; a changed count is one TFJobScaled event, and only the pods
of the added or removed indices are made or deleted."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from taas_operator import cli
from taas_operator.api import parse_tfjob
from taas_operator.api.constants import MAX_REPLICAS
from taas_operator.apiserver.errors import Invalid
from taas_operator.client.scale import checked_workers
from taas_operator.controller import metrics
from taas_operator.planner import ObservedPod, plan_job
from taas_operator.planner.budget import job_bytes
from taas_operator.planner.scaling import REASON_SCALED, held_scale

from .helpers import manifest, pod

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SELECTOR = (
    "training.kubeflow.org/operator-name=tfjob-controller,"
    "training.kubeflow.org/job-name=mnist,training.kubeflow.org/replica-type=worker"
)


def _scaled(workers: int, status: dict) -> dict:
    body = manifest({"PS": 1, "Worker": workers})
    body["status"] = status
    return body


def _running(workers: int) -> list[ObservedPod]:
    return [pod("PS", 0)] + [pod("Worker", i) for i in range(workers)]


def _scale_events(plan) -> list[str]:  # type: ignore[no-untyped-def]
    return [e.message for e in plan.events if e.reason == REASON_SCALED]


def test_the_first_pass_records_the_count_and_the_selector_without_an_event() -> None:
    plan = plan_job(parse_tfjob(_scaled(2, {})), [], NOW, services=[])
    assert plan.status.worker_replicas == 2
    assert plan.status.replica_statuses["Worker"].selector == SELECTOR
    assert _scale_events(plan) == []


def test_the_selector_matches_the_labels_of_the_worker_pods_made() -> None:
    plan = plan_job(parse_tfjob(_scaled(2, {})), [], NOW, services=[])
    selector = dict(term.split("=") for term in SELECTOR.split(","))
    workers = [p for p in plan.create_pods if "-worker-" in p["metadata"]["name"]]
    others = [p for p in plan.create_pods if "-worker-" not in p["metadata"]["name"]]
    assert len(workers) == 2 and others
    assert all(selector.items() <= p["metadata"]["labels"].items() for p in workers)
    assert not any(selector.items() <= p["metadata"]["labels"].items() for p in others)


def test_scaling_up_makes_only_the_new_indices_and_says_so_once() -> None:
    status = plan_job(parse_tfjob(_scaled(2, {})), _running(2), NOW, services=[]).status
    plan = plan_job(parse_tfjob(_scaled(4, status.to_dict())), _running(2), NOW, services=[])
    assert sorted(p["metadata"]["name"] for p in plan.create_pods) == [
        "mnist-worker-2",
        "mnist-worker-3",
    ]
    assert plan.delete_pods == []
    assert _scale_events(plan) == ["TFJob mnist scaled up from 2 to 4 Worker replicas."]
    assert plan.status.worker_replicas == 4
    again = plan_job(parse_tfjob(_scaled(4, plan.status.to_dict())), _running(4), NOW)
    assert _scale_events(again) == []  # said once, not every pass


def test_scaling_down_deletes_only_the_removed_indices() -> None:
    status = plan_job(parse_tfjob(_scaled(4, {})), _running(4), NOW, services=[]).status
    services = [f"mnist-worker-{i}" for i in range(4)] + ["mnist-ps-0"]
    job = parse_tfjob(_scaled(1, status.to_dict()))
    plan = plan_job(job, _running(4), NOW, services=services)
    assert sorted(plan.delete_pods) == ["mnist-worker-1", "mnist-worker-2", "mnist-worker-3"]
    assert sorted(plan.delete_services) == sorted(plan.delete_pods)
    assert plan.create_pods == []
    assert _scale_events(plan) == ["TFJob mnist scaled down from 4 to 1 Worker replicas."]


def test_a_job_without_workers_has_no_count_and_no_selector() -> None:
    plan = plan_job(parse_tfjob(manifest({"Chief": 1, "PS": 1})), [], NOW, services=[])
    assert plan.status.worker_replicas is None
    assert all(s.selector is None for s in plan.status.replica_statuses.values())


def test_a_finished_job_keeps_its_count_and_says_nothing() -> None:
    status = plan_job(parse_tfjob(_scaled(2, {})), _running(2), NOW).status.to_dict()
    status["conditions"].append({"type": "Succeeded", "status": "True"})
    plan = plan_job(parse_tfjob(_scaled(5, status)), [], NOW)
    assert plan.status.worker_replicas == 2
    assert _scale_events(plan) == [] and plan.create_pods == []


def test_the_counter_counts_each_change_by_direction() -> None:
    def value(direction: str) -> float:
        sample = metrics.REGISTRY.get_sample_value(
            "taas_operator_job_scale_changes_total",
            {"job_namespace": "scale-ns", "direction": direction},
        )
        return sample or 0.0

    up, down = value("up"), value("down")
    metrics.status_written("scale-ns", {}, {"workerReplicas": 2})  # first sight: no change
    metrics.status_written("scale-ns", {"workerReplicas": 2}, {"workerReplicas": 4})
    metrics.status_written("scale-ns", {"workerReplicas": 4}, {"workerReplicas": 4})
    metrics.status_written("scale-ns", {"workerReplicas": 4}, {"workerReplicas": 1})
    assert (value("up") - up, value("down") - down) == (1, 1)


@pytest.mark.parametrize("bad", [-1, 5001, 2.5, "4", True, None])
def test_a_worker_count_outside_the_bound_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(Invalid, match="workers must be"):
        checked_workers(bad)


@pytest.mark.parametrize("good", [0, 1, MAX_REPLICAS])
def test_a_worker_count_inside_the_bound_is_taken(good: int) -> None:
    assert checked_workers(good) == good


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--workers", "-3"], "workers must be from 0 to 5000"),
        (["--workers", "5001"], "not 5001; fix"),
        (["--workers", "four"], "invalid int value: 'four'"),
        ([], "--workers"),
    ],
)
def test_taas_scale_with_a_bad_count_exits_2_before_connecting(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["scale", "mnist", *flags, "--kubeconfig", str(tmp_path / "none")]
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's own refusals
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2 and said in err, err
    assert "Traceback" not in err and "kubeconfig" not in err.split("usage:")[0]


def test_a_scale_up_past_the_byte_budget_keeps_the_last_count() -> None:
    status = plan_job(parse_tfjob(_scaled(2, {})), _running(2), NOW).status.to_dict()
    small, big = parse_tfjob(_scaled(2, status)), parse_tfjob(_scaled(40, status))
    limit = (job_bytes(small).total + job_bytes(big).total) // 2
    held = held_scale(big, limit)
    assert held is not None
    kept, refusal = held
    assert kept.spec.tf_replica_specs["Worker"].replicas == 2
    assert big.spec.tf_replica_specs["Worker"].replicas == 40  # the stored spec is not changed
    assert refusal.startswith("TFJob ns1/mnist: scaling from 2 to 40 Worker replicas refused")
    assert "over the limit" in refusal and "scale back to 2 or fewer" in refusal
    plan = plan_job(kept, _running(2), NOW)  # what the operator plans with: nothing changes
    assert plan.create_pods == [] and plan.delete_pods == [] and _scale_events(plan) == []
    assert plan.status.worker_replicas == 2
    # within the budget, a scale-down, or no count seen yet: not held
    assert held_scale(big, job_bytes(big).total) is None
    assert held_scale(parse_tfjob(_scaled(1, status)), 1) is None
    assert held_scale(parse_tfjob(_scaled(40, {})), limit) is None
