"""Training progress in the status (engine.progress): the report -> status.progress mapping,
the write rate, the end of a job, the chief and its port, and the NetworkPolicy's progress rule.
Pure: no I/O, a fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from taas_operator.api import ProgressReport, parse_tfjob
from taas_operator.api.constants import DEFAULT_PROGRESS_PORT
from taas_operator.api.state import job_state
from taas_operator.planner import (
    ObservedPod,
    chief_pod,
    desired_network_policy,
    desired_pods,
    final_report,
    fold_progress,
    format_eta,
    plan_job,
    progress_columns,
    progress_port,
)

from .helpers import job, manifest, pod

T0 = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
INTERVAL = 30.0


def report(step: int, at: datetime, **extra: Any) -> ProgressReport:
    return ProgressReport.model_validate(
        {"time": at.timestamp(), "globalStep": step, "maxSteps": 1000, **extra}
    )


def running_job() -> Any:
    """A Worker-only job whose worker 0 runs (status Created + Running)."""
    tfjob = job({"Worker": 2})
    plan = plan_job(tfjob, [pod("Worker", 0), pod("Worker", 1)], T0)
    return tfjob.model_copy(update={"status": plan.status})


def test_a_report_becomes_the_status_columns() -> None:
    tfjob = running_job()
    plan = plan_job(tfjob, [pod("Worker", 0), pod("Worker", 1)], T0)
    assert not plan.status_changed  # nothing to do: the lifecycle writes nothing
    scalars = {f"s{i}": [{"step": s, "value": s / 10} for s in range(8)] for i in range(20)}
    scalars["x" * 64] = [{"step": 1, "value": 1.0}]
    got = report(412, T0, loss=0.31, examplesPerSecond=2450.5, etaSeconds=95.4, scalars=scalars)
    fold_progress(tfjob, plan, got, T0, interval=INTERVAL)
    assert plan.status_changed
    progress = plan.status.progress
    assert progress is not None
    assert (progress.percent, progress.percent_text, progress.eta) == (41, "41%", "1m35s")
    assert (progress.step, progress.max_steps, progress.eta_seconds) == (412, 1000, 95)
    assert (progress.loss, progress.examples_per_second) == (0.31, 2450.5)
    assert progress.last_update_time == T0 == progress.report_time
    assert len(progress.scalars) == 16 and "x" * 64 not in progress.scalars
    assert [p.step for p in progress.scalars["s0"]] == [3, 4, 5, 6, 7]  # the last five
    assert progress_columns(plan.status) == ("41%", "1m35s")
    written = plan.status.to_dict()["progress"]
    assert written["percentText"] == "41%" and written["lastUpdateTime"] == "2026-11-23T12:00:00Z"


def test_progress_alone_is_written_at_most_once_per_interval() -> None:
    tfjob = running_job()
    pods = [pod("Worker", 0), pod("Worker", 1)]
    plan = plan_job(tfjob, pods, T0)
    fold_progress(tfjob, plan, report(100, T0), T0, interval=INTERVAL)
    tfjob = tfjob.model_copy(update={"status": plan.status})

    later = T0 + timedelta(seconds=10)
    plan = plan_job(tfjob, pods, later)
    fold_progress(tfjob, plan, report(200, later), later, interval=INTERVAL)
    assert not plan.status_changed  # too soon: nothing written...
    assert plan.requeue_at == T0 + timedelta(seconds=INTERVAL)  # ...a pass asked for then
    assert plan.status.progress is not None and plan.status.progress.step == 100

    due = T0 + timedelta(seconds=INTERVAL)
    plan = plan_job(tfjob, pods, due)
    fold_progress(tfjob, plan, report(200, later), due, interval=INTERVAL)
    assert plan.status_changed and plan.status.progress is not None
    assert plan.status.progress.step == 200 and plan.status.progress.last_update_time == due

    # the executor's own memory of its last write bounds the rate even when the status lost it
    # (a CRD that prunes status.progress)
    bare = running_job()
    plan = plan_job(bare, pods, due)
    fold_progress(bare, plan, report(300, due), due, interval=INTERVAL, last_update=later)
    assert not plan.status_changed and plan.requeue_at == later + timedelta(seconds=INTERVAL)


def test_a_report_rides_along_with_a_lifecycle_write_after_half_the_interval() -> None:
    tfjob = running_job()
    pods = [pod("Worker", 0), pod("Worker", 1)]
    plan = plan_job(tfjob, pods, T0)
    fold_progress(tfjob, plan, report(100, T0), T0, interval=INTERVAL)
    tfjob = tfjob.model_copy(update={"status": plan.status})

    soon = T0 + timedelta(seconds=16)
    failed_worker = [pod("Worker", 0), pod("Worker", 1, "Failed", exit_code=1)]
    plan = plan_job(tfjob, failed_worker, soon)  # the lifecycle writes anyway (Failed)
    assert plan.status_changed
    fold_progress(tfjob, plan, report(150, soon), soon, interval=INTERVAL)
    progress = plan.status.progress
    # the pass that ends the job takes the newest report whatever the rate (it writes anyway)
    assert progress is not None and progress.step == 150
    assert progress.eta is None and progress.percent == 15  # Failed keeps percent, drops ETA

    restarting = job({"Worker": 2}, restart_policy="OnFailure")
    plan = plan_job(restarting, pods, T0)
    fold_progress(restarting, plan, report(100, T0), T0, interval=INTERVAL)
    restarting = restarting.model_copy(update={"status": plan.status})
    evicted = [pod("Worker", 0), pod("Worker", 1, "Failed", exit_code=137, uid="w1-a")]
    too_soon = T0 + timedelta(seconds=14)
    plan = plan_job(restarting, evicted, too_soon)
    assert plan.status_changed  # Restarting
    fold_progress(restarting, plan, report(140, too_soon), too_soon, interval=INTERVAL)
    assert plan.status.progress is not None and plan.status.progress.step == 100
    plan = plan_job(restarting, evicted, soon)
    fold_progress(restarting, plan, report(150, soon), soon, interval=INTERVAL)
    assert plan.status.progress is not None and plan.status.progress.step == 150


def test_old_reports_and_suspended_jobs_change_nothing() -> None:
    tfjob = running_job()
    pods = [pod("Worker", 0), pod("Worker", 1)]
    plan = plan_job(tfjob, pods, T0)
    fold_progress(tfjob, plan, report(100, T0), T0, interval=INTERVAL)
    tfjob = tfjob.model_copy(update={"status": plan.status})
    much_later = T0 + timedelta(minutes=5)
    plan = plan_job(tfjob, pods, much_later)
    fold_progress(tfjob, plan, report(100, T0), much_later, interval=INTERVAL)  # same report
    assert not plan.status_changed and plan.requeue_at is None

    suspended = parse_tfjob(
        {**tfjob.to_dict(), "spec": {**tfjob.spec.to_dict(), "runPolicy": {"suspend": True}}}
    )
    plan = plan_job(suspended, pods, much_later)
    fold_progress(suspended, plan, report(500, much_later), much_later, interval=INTERVAL)
    assert plan.status.progress is not None and plan.status.progress.step == 100


def test_success_shows_done() -> None:
    tfjob = running_job()
    pods = [pod("Worker", 0), pod("Worker", 1)]
    plan = plan_job(tfjob, pods, T0)
    fold_progress(tfjob, plan, report(990, T0, etaSeconds=4), T0, interval=INTERVAL)
    tfjob = tfjob.model_copy(update={"status": plan.status})
    end = T0 + timedelta(seconds=5)
    plan = plan_job(tfjob, [pod("Worker", 0, "Succeeded", exit_code=0), pod("Worker", 1)], end)
    fold_progress(tfjob, plan, None, end, interval=INTERVAL)
    assert job_state(plan.status).state == "Succeeded"
    assert progress_columns(plan.status) == ("100%", "0s")
    assert plan.status.progress is not None and plan.status.progress.step == 990


def test_no_report_no_progress() -> None:
    """A program without the trainer library: nothing is added, no pass is asked for."""
    tfjob = running_job()
    plan = plan_job(tfjob, [pod("Worker", 0), pod("Worker", 1)], T0)
    fold_progress(tfjob, plan, None, T0, interval=INTERVAL)
    assert plan.status.progress is None and not plan.status_changed and plan.requeue_at is None
    assert progress_columns(plan.status) == ("-", "-")


def test_chief_pod_and_port() -> None:
    assert format_eta(5) == "5s" and format_eta(95) == "1m35s" and format_eta(7380) == "2h03m"
    workers = job({"PS": 1, "Worker": 2})
    running = [pod("PS", 0), pod("Worker", 1), pod("Worker", 0, pod_ip="10.0.0.7")]
    chief = chief_pod(workers, running)
    assert chief is not None and (chief.name, chief.pod_ip) == ("mnist-worker-0", "10.0.0.7")
    assert chief_pod(workers, [pod("Worker", 0, "Pending"), pod("Worker", 1)]) is None
    assert chief_pod(workers, [pod("Worker", 0, deleting=True)]) is None
    with_chief = job({"Chief": 1, "Worker": 2})
    found = chief_pod(with_chief, [pod("Worker", 0), pod("Chief", 0)])
    assert found is not None and found.replica_type == "Chief"
    assert progress_port(workers) == DEFAULT_PROGRESS_PORT == 2223
    m = manifest({"Chief": 1, "Worker": 1})
    m["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "TAAS_PROGRESS_PORT", "value": "9555"}
    ]
    assert progress_port(parse_tfjob(m)) == 9555


def test_the_chief_declares_its_progress_port_and_only_that_is_read() -> None:
    m = manifest({"Chief": 1, "Worker": 1})
    chief_spec = m["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]
    chief_spec["containers"][0]["env"] = [{"name": "TAAS_PROGRESS_PORT", "value": "9555"}]
    chief_spec["containers"][0]["ports"] = [{"name": "taas-progress", "containerPort": 10250}]
    tfjob = parse_tfjob(m)
    built = {p["metadata"]["name"]: p for p in desired_pods(tfjob)}
    chief, worker = built["mnist-chief-0"], built["mnist-worker-0"]
    # The port it serves on, declared once (a template's own taas-progress port is replaced).
    assert [p for p in chief["spec"]["containers"][0]["ports"] if p["name"] == "taas-progress"] == [
        {"name": "taas-progress", "containerPort": 9555}
    ]
    assert ObservedPod.from_manifest(chief).progress_port == 9555  # type: ignore[union-attr]
    assert ObservedPod.from_manifest(worker).progress_port is None  # type: ignore[union-attr]
    # With hostNetwork the pod's IP is its node's: nothing is declared, nothing is read.
    chief_spec["hostNetwork"] = True
    host = next(p for p in desired_pods(parse_tfjob(m)) if p["metadata"]["name"] == "mnist-chief-0")
    assert "taas-progress" not in [p["name"] for p in host["spec"]["containers"][0]["ports"]]
    chief["spec"]["hostNetwork"] = True  # a pod made before, read as it is now
    assert ObservedPod.from_manifest(chief).progress_port is None  # type: ignore[union-attr]


def test_network_policy_admits_the_operator_namespace_to_the_progress_port_only() -> None:
    tfjob = job({"PS": 1, "Worker": 2})
    without = desired_network_policy(tfjob)
    policy = desired_network_policy(tfjob, progress_namespace="taas-system")
    tf_rule, progress_rule = policy["spec"]["ingress"]
    assert tf_rule == without["spec"]["ingress"][0]  # the TF ports: still the job's own
    assert progress_rule == {
        "from": [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "taas-system"}}}
        ],
        "ports": [{"protocol": "TCP", "port": 2223}],
    }
    m = manifest({"Worker": 1})
    m["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "progress", "containerPort": 2223}
    ]
    declared = desired_network_policy(parse_tfjob(m), progress_namespace="taas-system")
    # a port the job declares itself is open already (the "other ports" rule): no extra rule
    assert [r.get("from") for r in declared["spec"]["ingress"]][1:] == [None]


def test_the_chiefs_last_report_is_kept_when_it_ends() -> None:
    """The chief's termination message carries its last report: the pass that sees the job
    end folds it, with 100% for a success, whatever was read before."""
    tfjob = running_job()
    last = report(1000, T0 + timedelta(seconds=40), loss=0.05)
    ended = pod("Worker", 0, "Succeeded", exit_code=0, termination_message=last.model_dump_json())
    assert final_report(tfjob, [ended, pod("Worker", 1)]) == last
    plan = plan_job(tfjob, [ended, pod("Worker", 1, "Succeeded", exit_code=0)], T0)
    assert plan.status.finished
    fold_progress(tfjob, plan, final_report(tfjob, [ended]), T0, interval=INTERVAL)
    progress = plan.status.progress
    assert progress is not None and progress.step == 1000 and progress.loss == 0.05
    assert progress.percent_text == "100%" and progress.eta == "0s"
    # A program without the library leaves text that is not a report; a running chief nothing.
    plain = pod("Worker", 0, "Failed", exit_code=1, termination_message="Traceback ...")
    assert final_report(tfjob, [plain]) is None
    assert final_report(tfjob, [pod("Worker", 0)]) is None
