"""The lifecycle engine, rule by rule: (job, observed pods, now) -> Plan. No I/O, no TF."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from taas_operator.api import TFJob, TFJobStatus
from taas_operator.planner import ObservedPod, Plan, plan_job, status_changed

from .helpers import job, pod

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def step(tfjob: TFJob, pods: list[ObservedPod], now: datetime = T0, **kw) -> Plan:
    """Plan and store the new status on the job, like the operator would."""
    plan = plan_job(tfjob, pods, now, **kw)
    tfjob.status = TFJobStatus.model_validate(plan.status.to_dict())  # a round trip via JSON
    return plan


def types(plan: Plan) -> list[str]:
    return [(c.type, c.status) for c in plan.status.conditions]


def created_names(plan: Plan) -> list[str]:
    return [p["metadata"]["name"] for p in plan.create_pods]


# -- creation, idempotence, running ------------------------------------------------------------


def test_new_job_creates_everything_once():
    tfjob = job({"PS": 1, "Worker": 2})
    plan = step(tfjob, [], services=[])
    assert types(plan) == [("Created", "True")]
    assert plan.status.conditions[0].message == "TFJob mnist is created."
    assert plan.status.start_time == T0
    assert created_names(plan) == ["mnist-ps-0", "mnist-worker-0", "mnist-worker-1"]
    assert [s["metadata"]["name"] for s in plan.create_services] == created_names(plan)
    assert plan.status_changed
    assert [(e.type, e.reason) for e in plan.events] == [("Normal", "TFJobCreated")]

    pending = [pod("PS", 0, "Pending"), pod("Worker", 0, "Pending"), pod("Worker", 1, "Pending")]
    again = step(tfjob, pending, T0 + timedelta(seconds=5), services=created_names(plan))
    assert again.create_pods == [] and again.create_services == []
    assert again.delete_pods == [] and again.delete_services == []
    assert not again.status_changed
    assert again.events == []


def test_running_condition_and_replica_statuses():
    tfjob = job({"PS": 1, "Worker": 2})
    step(tfjob, [])
    plan = step(tfjob, [pod("PS", 0), pod("Worker", 0), pod("Worker", 1, "Pending")])
    assert types(plan) == [("Created", "True"), ("Running", "True")]
    assert plan.status.conditions[-1].message == "TFJob ns1/mnist is running."
    assert plan.status.replica_statuses["Worker"].active == 1
    assert plan.status.replica_statuses["PS"].active == 1
    assert [(e.type, e.reason) for e in plan.events] == [("Normal", "TFJobRunning")]


def test_deleted_pod_is_recreated_and_deleting_pod_is_waited_for():
    tfjob = job({"Worker": 2})
    step(tfjob, [])
    plan = step(tfjob, [pod("Worker", 0)], services=["mnist-worker-0"])
    assert created_names(plan) == ["mnist-worker-1"]
    assert [s["metadata"]["name"] for s in plan.create_services] == ["mnist-worker-1"]
    plan = step(tfjob, [pod("Worker", 0), pod("Worker", 1, deleting=True)])
    assert plan.create_pods == [] and plan.delete_pods == []


# -- success -----------------------------------------------------------------------------------

SUCCESS = [
    # (replicas, successPolicy, pods as (type, index, phase), succeeded?)
    (
        {"PS": 1, "Worker": 2},
        "",
        [("PS", 0, "Running"), ("Worker", 0, "Succeeded"), ("Worker", 1, "Running")],
        True,
    ),
    (
        {"PS": 1, "Worker": 2},
        "",
        [("PS", 0, "Running"), ("Worker", 0, "Running"), ("Worker", 1, "Succeeded")],
        False,
    ),
    ({"Worker": 2}, "AllWorkers", [("Worker", 0, "Succeeded"), ("Worker", 1, "Running")], False),
    ({"Worker": 2}, "AllWorkers", [("Worker", 0, "Succeeded"), ("Worker", 1, "Succeeded")], True),
    ({"Chief": 1, "Worker": 1}, "", [("Chief", 0, "Running"), ("Worker", 0, "Succeeded")], False),
    ({"Chief": 1, "Worker": 1}, "", [("Chief", 0, "Succeeded"), ("Worker", 0, "Running")], True),
    ({"Master": 1, "Worker": 1}, "", [("Master", 0, "Succeeded"), ("Worker", 0, "Running")], True),
    ({"PS": 1}, "", [("PS", 0, "Succeeded")], False),
]


@pytest.mark.parametrize(("replicas", "policy", "pods", "expected"), SUCCESS)
def test_success_rules(replicas, policy, pods, expected):
    tfjob = job(replicas, successPolicy=policy)
    step(tfjob, [])
    observed = [pod(t, i, ph, exit_code=0 if ph == "Succeeded" else None) for t, i, ph in pods]
    plan = step(tfjob, observed, T0 + timedelta(seconds=30))
    assert plan.status.is_true("Succeeded") is expected
    if expected:
        assert plan.status.completion_time == T0 + timedelta(seconds=30)
        assert plan.status.conditions[-1].message == "TFJob ns1/mnist successfully completed."
        assert plan.status.conditions[-1].reason == "TFJobSucceeded"
        assert all(s.active == 0 for s in plan.status.replica_statuses.values())
        assert plan.create_pods == []


def test_worker0_failed_exit_code_is_not_success():
    tfjob = job({"Worker": 2}, restart_policy="OnFailure")
    step(tfjob, [])
    plan = step(tfjob, [pod("Worker", 0, "Succeeded", exit_code=3), pod("Worker", 1)])
    assert not plan.status.is_true("Succeeded")


def test_success_after_running_sets_running_false():
    tfjob = job({"Worker": 1})
    step(tfjob, [])
    step(tfjob, [pod("Worker", 0)])
    plan = step(tfjob, [pod("Worker", 0, "Succeeded", exit_code=0)], T0 + timedelta(seconds=9))
    assert types(plan) == [("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    assert plan.status.replica_statuses["Worker"].succeeded == 1


# -- failures and restarts ---------------------------------------------------------------------

FAILURES = [
    # (restartPolicy, exit code, job fails?, pod recreated?)
    ("Never", 1, True, False),
    ("Never", 137, True, False),
    ("ExitCode", 1, True, False),
    ("ExitCode", 127, True, False),
    ("ExitCode", 128, False, True),
    ("ExitCode", 130, False, True),
    ("ExitCode", None, False, True),
    ("OnFailure", 1, False, True),
    ("Always", 1, False, True),
]


@pytest.mark.parametrize(("policy", "code", "fails", "recreated"), FAILURES)
def test_failed_pod_by_restart_policy(policy, code, fails, recreated):
    tfjob = job({"PS": 1, "Worker": 2}, restart_policy=policy)
    step(tfjob, [])
    failed = pod("Worker", 1, "Failed", exit_code=code, reason="Error")
    plan = step(tfjob, [pod("PS", 0), pod("Worker", 0), failed], services=["mnist-worker-1"])
    assert plan.status.is_true("Failed") is fails
    assert ("mnist-worker-1" in plan.delete_pods) is recreated
    assert plan.delete_services == []  # a recreated pod keeps its service
    last = plan.status.conditions[-1]
    if fails:
        assert last.reason == "TFJobFailed"
        assert last.message.startswith(
            "TFJob ns1/mnist has failed because 1 Worker replica(s) failed"
        )
        assert f"pod mnist-worker-1, container tensorflow, exit code {code}" in last.message
        assert "mnist-ps-0" in plan.delete_pods  # cleanPodPolicy Running
        assert plan.status.replica_statuses["Worker"].failed == 1
    if recreated:
        assert last.type == "Restarting" and last.reason == "TFJobRestarting"
        assert last.message.startswith(
            "TFJob mnist is restarting because 1 Worker replica(s) failed"
        )
        assert plan.status.recreations["mnist-worker-1"].count == 1
        assert ("Warning", "TFJobRestarting") in [(e.type, e.reason) for e in plan.events]
        # The next pass, with the old pod gone, creates it again and keeps the count.
        again = step(tfjob, [pod("PS", 0), pod("Worker", 0)])
        assert created_names(again) == ["mnist-worker-1"]
        assert again.status.recreations["mnist-worker-1"].count == 1


def test_dynamic_worker_failure_does_not_fail_the_job():
    tfjob = job({"PS": 1, "Worker": 2}, enableDynamicWorker=True)
    step(tfjob, [])
    plan = step(tfjob, [pod("PS", 0), pod("Worker", 0), pod("Worker", 1, "Failed", exit_code=1)])
    assert not plan.status.is_true("Failed")


def test_failed_stays_failed():
    tfjob = job({"Worker": 1})
    step(tfjob, [])
    failed = step(tfjob, [pod("Worker", 0, "Failed", exit_code=2)])
    assert failed.status.is_true("Failed")
    later = step(tfjob, [pod("Worker", 0, "Succeeded", exit_code=0)], T0 + timedelta(minutes=1))
    assert not later.status_changed
    assert types(later)[-1] == ("Failed", "True")


# -- backoffLimit -------------------------------------------------------------------------------


def test_backoff_counts_in_place_restarts():
    tfjob = job({"Worker": 2}, restart_policy="OnFailure", run_policy={"backoffLimit": 2})
    step(tfjob, [])
    ok = step(tfjob, [pod("Worker", 0, restart_count=1), pod("Worker", 1)])
    assert not ok.status.is_true("Failed")
    plan = step(tfjob, [pod("Worker", 0, restart_count=1), pod("Worker", 1, restart_count=1)])
    assert plan.status.is_true("Failed")
    assert plan.status.conditions[-1].message.startswith(
        "Job mnist has failed because it has reached the specified backoff limit"
    )


def test_backoff_counts_exit_code_recreations_once_per_pod():
    tfjob = job({"Worker": 1}, restart_policy="ExitCode", run_policy={"backoffLimit": 3})
    step(tfjob, [])
    for attempt in (1, 2):
        failed = pod("Worker", 0, "Failed", exit_code=137, uid=f"u{attempt}")
        plan = step(tfjob, [failed])
        assert plan.delete_pods == ["mnist-worker-0"]
        # Seen again before the delete took effect: counted once only.
        plan = step(tfjob, [failed])
        assert plan.status.recreations["mnist-worker-0"].count == attempt
        assert not plan.status.is_true("Failed")
        step(tfjob, [])
    plan = step(tfjob, [pod("Worker", 0, "Failed", exit_code=137, uid="u3")])
    assert plan.status.is_true("Failed")
    assert (
        "backoff limit (last failure: pod mnist-worker-0, container tensorflow, exit code 137"
        in (plan.status.conditions[-1].message)
    )
    assert plan.create_pods == []


def test_a_crash_looping_pod_counts_failed_when_the_job_fails():
    """OnFailure keeps a crash-looping pod Running; when its restarts fail the job, it counts as
    failed (its last run failed), not active; a healthy running pod keeps Kubeflow's count."""
    tfjob = job({"Worker": 2}, restart_policy="OnFailure", run_policy={"backoffLimit": 1})
    step(tfjob, [])
    looping = pod("Worker", 0, restart_count=1, exit_code=1, reason="Error")
    plan = step(tfjob, [looping, pod("Worker", 1)])
    assert plan.status.is_true("Failed")
    counts = plan.status.replica_statuses["Worker"].to_dict()
    assert {k: counts[k] for k in ("active", "succeeded", "failed")} == {
        "active": 1,
        "succeeded": 0,
        "failed": 1,
    }


def test_backoff_limit_zero_fails_on_first_restart():
    tfjob = job({"Worker": 1}, restart_policy="OnFailure", run_policy={"backoffLimit": 0})
    step(tfjob, [])
    assert step(tfjob, [pod("Worker", 0, restart_count=1)]).status.is_true("Failed")


# -- deadline and TTL ---------------------------------------------------------------------------


def test_active_deadline_is_requeued_on_time_and_fires():
    tfjob = job({"PS": 1, "Worker": 1}, run_policy={"activeDeadlineSeconds": 60})
    step(tfjob, [])
    running = [pod("PS", 0), pod("Worker", 0)]
    plan = step(tfjob, running, T0 + timedelta(seconds=30))
    assert plan.requeue_at == T0 + timedelta(seconds=60)
    plan = step(tfjob, running, T0 + timedelta(seconds=60))
    assert plan.status.is_true("Failed")
    assert plan.status.conditions[-1].message == (
        "Job mnist has failed because it was active longer than specified deadline"
    )
    assert sorted(plan.delete_pods) == ["mnist-ps-0", "mnist-worker-0"]


def test_ttl_after_finished():
    tfjob = job({"Worker": 1}, run_policy={"ttlSecondsAfterFinished": 10})
    step(tfjob, [])
    done = step(tfjob, [pod("Worker", 0, "Succeeded", exit_code=0)])
    assert done.requeue_at == T0 + timedelta(seconds=10)
    assert not done.delete_job
    early = step(tfjob, [pod("Worker", 0, "Succeeded")], T0 + timedelta(seconds=9))
    assert not early.delete_job and early.requeue_at == T0 + timedelta(seconds=10)
    late = step(
        tfjob,
        [pod("Worker", 0, "Succeeded")],
        T0 + timedelta(seconds=10),
        services=["mnist-worker-0"],
    )
    assert late.delete_job
    assert late.delete_pods == ["mnist-worker-0"] and late.delete_services == ["mnist-worker-0"]


# -- cleanPodPolicy -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "deleted"),
    [
        ("All", ["mnist-ps-0", "mnist-worker-0", "mnist-worker-1"]),
        ("Running", ["mnist-ps-0", "mnist-worker-1"]),
        ("None", []),
    ],
)
def test_clean_pod_policy_on_finish(policy, deleted):
    tfjob = job({"PS": 1, "Worker": 2}, run_policy={"cleanPodPolicy": policy})
    step(tfjob, [])
    pods = [pod("PS", 0), pod("Worker", 0, "Succeeded", exit_code=0), pod("Worker", 1, "Pending")]
    names = [p.name for p in pods]
    plan = step(tfjob, pods, services=names)
    assert plan.status.is_true("Succeeded")
    assert sorted(plan.delete_pods) == deleted
    assert sorted(plan.delete_services) == deleted


def test_default_clean_pod_policy_is_running():
    assert job({"Worker": 1}).spec.run_policy.clean_pod_policy == "Running"


# -- suspend / resume, scaling, managedBy ------------------------------------------------------


def test_suspend_and_resume():
    tfjob = job({"PS": 1, "Worker": 1})
    step(tfjob, [])
    running = [pod("PS", 0), pod("Worker", 0)]
    step(tfjob, running)
    tfjob.spec.run_policy.suspend = True
    plan = step(
        tfjob, running, T0 + timedelta(seconds=5), services=["mnist-ps-0", "mnist-worker-0"]
    )
    assert sorted(plan.delete_pods) == ["mnist-ps-0", "mnist-worker-0"]
    assert sorted(plan.delete_services) == ["mnist-ps-0", "mnist-worker-0"]
    assert types(plan) == [("Created", "True"), ("Running", "False"), ("Suspended", "True")]
    assert plan.status.conditions[-1].reason == "TFJobSuspended"
    assert all(s.active == 0 for s in plan.status.replica_statuses.values())
    tfjob.spec.run_policy.suspend = False
    resumed = step(tfjob, [], T0 + timedelta(seconds=50), services=[])
    assert ("Suspended", "False") in types(resumed)
    assert resumed.status.condition("Suspended").reason == "TFJobResumed"
    assert resumed.status.start_time == T0 + timedelta(seconds=50)
    assert created_names(resumed) == ["mnist-ps-0", "mnist-worker-0"]
    assert len(resumed.create_services) == 2


def test_created_suspended_gets_no_start_time_and_no_pods():
    tfjob = job({"Worker": 1}, run_policy={"suspend": True})
    plan = step(tfjob, [])
    assert plan.status.start_time is None and plan.create_pods == []
    assert plan.status.is_true("Suspended")


def test_scale_down_and_up():
    tfjob = job({"Worker": 3})
    step(tfjob, [])
    pods = [pod("Worker", i) for i in range(3)]
    names = [p.name for p in pods]
    tfjob.spec.tf_replica_specs["Worker"].replicas = 1
    down = step(tfjob, pods, services=names)
    assert down.delete_pods == ["mnist-worker-1", "mnist-worker-2"]
    assert down.delete_services == ["mnist-worker-1", "mnist-worker-2"]
    tfjob.spec.tf_replica_specs["Worker"].replicas = 4
    up = step(tfjob, pods[:1], services=names[:1])
    assert created_names(up) == ["mnist-worker-1", "mnist-worker-2", "mnist-worker-3"]
    # The new pods' TF_CONFIG lists four workers.
    env = up.create_pods[0]["spec"]["containers"][0]["env"]
    assert env[0]["value"].count("mnist-worker-") == 4


@pytest.mark.parametrize(
    ("managed_by", "skipped"),
    [(None, False), ("kubeflow.org/training-operator", False), ("kueue.x-k8s.io/multikueue", True)],
)
def test_managed_by(managed_by, skipped):
    tfjob = job({"Worker": 1}, run_policy={"managedBy": managed_by} if managed_by else {})
    plan = plan_job(tfjob, [], T0)
    assert (plan.skipped is not None) is skipped
    assert (plan.create_pods == []) is skipped


def test_template_restart_policy_warns():
    tfjob = job({"Worker": 2})
    tfjob.spec.tf_replica_specs["Worker"].template["spec"]["restartPolicy"] = "Always"
    plan = step(tfjob, [])
    warnings = [e for e in plan.events if e.reason == "SettedPodTemplateRestartPolicy"]
    assert len(warnings) == 1 and warnings[0].type == "Warning"
    assert all(p["spec"]["restartPolicy"] == "Never" for p in plan.create_pods)


# -- observed pods, status round trip -----------------------------------------------------------


def test_observed_pod_from_manifest():
    manifest = {
        "metadata": {
            "name": "mnist-worker-1",
            "uid": "abc",
            "labels": {
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1",
            },
        },
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {"name": "sidecar", "restartCount": 1, "state": {"running": {}}},
                {
                    "name": "tensorflow",
                    "restartCount": 2,
                    "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                },
            ],
        },
    }
    observed = ObservedPod.from_manifest(manifest)
    assert observed == ObservedPod(
        name="mnist-worker-1",
        replica_type="Worker",
        index=1,
        phase="Failed",
        uid="abc",
        exit_code=137,
        reason="OOMKilled",
        restart_count=3,
    )
    assert ObservedPod.from_manifest({"metadata": {"name": "x", "labels": {}}}) is None


def test_status_round_trip_is_not_a_change():
    tfjob = job({"PS": 1, "Worker": 1})
    plan = step(tfjob, [pod("PS", 0), pod("Worker", 0)], datetime(2025, 1, 1, 12, 0, 0, 123456))
    reread = TFJobStatus.model_validate(plan.status.to_dict())
    assert not status_changed(plan.status, reread)
    assert plan.status.to_dict()["startTime"] == "2025-01-01T12:00:00Z"


# -- restart scope (TaaS) -------------------------------------------------------------------------


def _whole(replicas: dict[str, int], scope: str | None = "job") -> TFJob:
    tfjob = job(replicas, restart_policy="ExitCode")
    if scope is not None:
        tfjob.metadata.annotations["taas.dev/restart-scope"] = scope
    step(tfjob, [])
    return tfjob


def test_a_job_that_restarts_whole_recreates_every_trainer_once_and_says_which_was_lost():
    """restart-scope job: one worker SIGKILLed (137) deletes every other Chief/Worker pod too
    (not the evaluator), counts one recreation, and Restarting names the lost one; the next
    passes wait for the old pods to go, then make them all again, counted once."""
    tfjob = _whole({"Chief": 1, "Worker": 2, "Evaluator": 1})
    lost = pod("Worker", 1, "Failed", exit_code=137, reason="Error")
    peers = [pod("Chief", 0), pod("Worker", 0), pod("Evaluator", 0)]
    plan = step(tfjob, [*peers, lost], services=["mnist-worker-1"])
    assert sorted(plan.delete_pods) == ["mnist-chief-0", "mnist-worker-0", "mnist-worker-1"]
    assert plan.delete_services == []
    last = plan.status.conditions[-1]
    assert last.type == "Restarting" and last.status == "True"
    assert last.message == (
        "TFJob mnist is restarting all 3 of its Chief/Master/Worker replicas (annotation "
        "taas.dev/restart-scope: job) because 1 Worker replica(s) failed (pod mnist-worker-1, "
        "container tensorflow, exit code 137, reason Error)."
    )
    assert ("Warning", "TFJobRestarting") in [(e.type, e.reason) for e in plan.events]
    assert {k: v.count for k, v in plan.status.recreations.items()} == {"mnist-worker-1": 1}
    # The peers end (143) while being deleted: nothing more is counted or deleted.
    ending = [pod("Chief", 0, "Failed", exit_code=143, deleting=True),
              pod("Worker", 0, "Failed", exit_code=143, deleting=True), pod("Evaluator", 0),
              pod("Worker", 1, "Failed", exit_code=137, deleting=True)]  # fmt: skip
    waiting = step(tfjob, ending)
    assert not waiting.delete_pods and not waiting.create_pods
    again = step(tfjob, [pod("Evaluator", 0)])
    assert sorted(created_names(again)) == ["mnist-chief-0", "mnist-worker-0", "mnist-worker-1"]
    assert {k: v.count for k, v in again.status.recreations.items()} == {"mnist-worker-1": 1}


def test_restarting_whole_counts_one_recreation_when_peers_fail_in_the_same_pass():
    """A peer whose collective lost the killed worker fails too (138, or a plain program's 1):
    seen in the same pass, it restarts with the rest, and only one recreation is counted."""
    tfjob = _whole({"Worker": 4})
    failing = [pod("Worker", 0, "Failed", exit_code=138), pod("Worker", 1, "Failed", exit_code=137),
               pod("Worker", 2, "Failed", exit_code=1), pod("Worker", 3)]  # fmt: skip
    plan = step(tfjob, failing)
    assert not plan.status.is_true("Failed")
    assert sorted(plan.delete_pods) == [f"mnist-worker-{i}" for i in range(4)]
    assert sum(r.count for r in plan.status.recreations.values()) == 1


def test_a_node_lost_under_restart_scope_job_restarts_every_trainer():
    tfjob = _whole({"Worker": 3})
    gone = pod("Worker", 2, "Running", node="n2", node_deleted=True, reason="DeletionByPodGC")
    plan = step(tfjob, [pod("Worker", 0), pod("Worker", 1), gone])
    assert {"mnist-worker-0", "mnist-worker-1"} <= set(plan.delete_pods)
    last = plan.status.conditions[-1]
    assert last.type == "Restarting" and "all 3 of its" in last.message
    assert "were lost with their node" in last.message and "mnist-worker-2" in last.message
    assert sum(r.count for r in plan.status.recreations.values()) == 1


@pytest.mark.parametrize("scope", [None, "replica", "something-else"])
def test_by_default_and_with_restart_scope_replica_only_the_lost_pod_is_recreated(scope):
    """Kubeflow's rule unless the job asks otherwise (an unknown value is the default)."""
    tfjob = _whole({"Worker": 3}, scope)
    plan = step(tfjob, [pod("Worker", 0), pod("Worker", 1, "Failed", exit_code=137),
                        pod("Worker", 2)])  # fmt: skip
    assert plan.delete_pods == ["mnist-worker-1"]
    assert plan.status.conditions[-1].message.startswith(
        "TFJob mnist is restarting because 1 Worker replica(s) failed"
    )
