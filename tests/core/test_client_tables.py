"""The client's pure pieces: a pod as a replica row, kubectl's AGE, the tables `taas get` and
`taas submit` print (the same STATE / PROGRESS / ETA columns as `kubectl get tfjobs`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from taas_operator.api import ProgressReport
from taas_operator.client.console import age, job_lines, jobs_table
from taas_operator.client.logs import replica_name
from taas_operator.client.models import ReplicaPod
from taas_operator.planner import fold_progress, plan_job

from .helpers import job, pod

NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)


def _pod(name: str, rtype: str, index: int, **status: object) -> dict:
    return {
        "metadata": {
            "name": name,
            "uid": f"{name}-uid",
            "labels": {
                "training.kubeflow.org/replica-type": rtype,
                "training.kubeflow.org/replica-index": str(index),
            },
            **({"deletionTimestamp": "2026-11-23T12:00:00Z"} if status.pop("gone", False) else {}),
        },
        "spec": {"nodeName": "node-1"},
        "status": status,
    }


def test_a_pod_as_a_replica() -> None:
    pending = ReplicaPod.from_pod(_pod("m-worker-1", "worker", 1, phase="Pending"))
    assert (pending.replica, pending.started, pending.state) == ("worker-1", False, "Pending")
    ended = ReplicaPod.from_pod(
        _pod(
            "m-ps-0",
            "ps",
            0,
            gone=True,
            phase="Running",
            podIP="10.1.2.3",
            containerStatuses=[
                {
                    "name": "tensorflow",
                    "restartCount": 2,
                    "state": {"running": {}},
                    "lastState": {"terminated": {"exitCode": 138, "reason": "Error"}},
                }
            ],
        )
    )
    assert (ended.replica, ended.restarts, ended.exit_code, ended.reason) == (
        "ps-0",
        2,
        138,
        "Error",
    )
    assert ended.started and ended.state == "Terminating" and ended.pod_ip == "10.1.2.3"
    assert sorted([pending, ended], key=lambda p: p.order)[0].replica == "ps-0"
    assert replica_name("Worker:1") == replica_name("worker-1") == "worker-1"


def test_age_like_kubectl() -> None:
    created = (NOW - timedelta(seconds=90)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert age(created, NOW) == "90s"
    assert age((NOW - timedelta(minutes=7)).isoformat(), NOW) == "7m"
    assert age((NOW - timedelta(hours=3, minutes=4)).isoformat(), NOW) == "3h4m"
    assert age((NOW - timedelta(hours=30)).isoformat(), NOW) == "1d"
    assert age(None, NOW) == "<unknown>"


def test_tables_show_state_progress_and_eta() -> None:
    tfjob = job({"PS": 1, "Worker": 2})
    tfjob.metadata.creation_timestamp = (NOW - timedelta(seconds=51)).strftime("%Y-%m-%dT%H:%M:%SZ")
    plan = plan_job(tfjob, [pod("PS", 0), pod("Worker", 0), pod("Worker", 1)], NOW)
    report = ProgressReport(time=NOW.timestamp(), global_step=250, max_steps=1000, eta_seconds=41)
    fold_progress(tfjob, plan, report, NOW, interval=30)
    running = tfjob.model_copy(update={"status": plan.status})
    assert jobs_table([running, job({"Worker": 1}, name="idle")], NOW) == [
        "NAME    STATE     REASON   WORKERS   PS   PROGRESS   ETA   AGE",
        "mnist   Running            2         1    25%        41s   51s",
        "idle                       1              -          -     <unknown>",
    ]
    wide = jobs_table([running], NOW, all_namespaces=True)
    assert wide[0].split()[:2] == ["NAMESPACE", "NAME"] and wide[1].split()[:2] == ["ns1", "mnist"]
    lines = job_lines(running, [ReplicaPod(name="mnist-ps-0", replica="ps-0", phase="Running")])
    assert lines[-2].split() == ["TFJOB", "STATE", "PROGRESS", "ETA", "MESSAGE"]
    assert lines[-1].split()[:4] == ["mnist", "Running", "25%", "41s"]
