"""Issue 32: Kueue's `waitForPodsReady` against TaaS's TFJob status, with a real Kueue.

Kueue v0.19's TFJob integration reads "pods ready" from the job, not from its pods: the
`Running` condition with status True (`kubeflowjob.PodsReady`). An admitted job that is not
ready within the timeout is evicted (the Workload's `Evicted`, reason `PodsReadyTimeout`),
suspended, and requeued once TaaS reports its replicas inactive.

Real: kube-apiserver + etcd, the operator process, Kueue's manager with
`waitForPodsReady.timeout` short (`SchedulingOptions.kueue_pods_ready_timeout`, what `cluster up
--kueue-pods-ready-timeout` sets). Not running: kubelet and scheduler (the tests write the pods'
status as a kubelet would: running, or waiting on an image that cannot be pulled).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from taas_controlplane.cluster.scheduling import SchedulingOptions, SchedulingStack
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from tests.builds import needs
from tests.harness.operator_run import (
    Api,
    StartOperator,
    condition,
    new_namespace,
)
from tests.harness.waiting import wait
from tests.operator.kueue_helpers import (
    live_pods,
    queued_job,
    queues,
    wait_workload_condition,
    workload,
    workload_condition,
)

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]

TIMEOUT = 15.0


@pytest.fixture(scope="module")
@needs("kueue")
def kueue(
    control_plane: ControlPlane, tfjob_crd: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchedulingStack]:
    """Kueue with the TFJob integration and a waitForPodsReady timeout of TIMEOUT seconds."""
    options = SchedulingOptions(kueue=True, kueue_pods_ready_timeout=TIMEOUT)
    with SchedulingStack(control_plane, tmp_path_factory.mktemp("kueue"), options) as stack:
        yield stack


def job_condition(job: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    """The TFJob's condition of this type, whatever its status."""
    for cond in ((job or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == type_:
            return dict(cond)
    return None


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def admitted_job(admin: Api, start_operator: StartOperator, job: str) -> tuple[str, list[str]]:
    """A namespace `job` with its operator and a queue of 2 CPUs, and the TFJob `job` of 2
    workers of 1 CPU in it, admitted; returns the namespace and the names of its 2 pods."""
    ns = new_namespace(admin, job)
    start_operator(ns)
    admin.create_tfjob(ns, queued_job(job, queues(admin, ns, cpu=2), 2, "1"))
    pods = wait(lambda: len(p := live_pods(admin, ns, job)) == 2 and p, f"{job}'s pods", timeout=60)
    return ns, sorted(pods)


def test_a_job_whose_pods_all_run_is_ready_to_kueue_and_stays_admitted(
    admin: Api, kueue: SchedulingStack, start_operator: StartOperator
) -> None:
    ns, pods = admitted_job(admin, start_operator, "ready")
    admitted_at = time.monotonic()
    waiting = workload_condition(admin, ns, "ready", "PodsReady")
    assert waiting and waiting["status"] == "False", waiting

    for pod in pods:
        admin.set_pod_phase(ns, pod, "Running")
    ready = wait_workload_condition(
        admin, ns, "ready", "PodsReady", "Kueue's PodsReady True", 30, "True"
    )
    assert condition(admin.tfjob(ns, "ready"), "Running")["status"] == "True"
    assert ready["reason"] == "Started", ready

    # Past the timeout: still admitted, never evicted, its pods untouched.
    time.sleep(max(0.0, admitted_at + TIMEOUT + 3 - time.monotonic()))
    assert workload_condition(admin, ns, "ready", "Admitted")["status"] == "True"
    assert workload_condition(admin, ns, "ready", "Evicted") is None
    assert sorted(live_pods(admin, ns, "ready")) == pods
    assert not condition(admin.tfjob(ns, "ready"), "Suspended")


def test_a_job_with_a_pod_that_cannot_start_is_evicted_after_the_timeout_and_requeued(
    admin: Api, kueue: SchedulingStack, start_operator: StartOperator
) -> None:
    ns, (first, second) = admitted_job(admin, start_operator, "stuck")
    admitted = workload_condition(admin, ns, "stuck", "Admitted")
    assert admitted and admitted["status"] == "True", admitted
    # Worker 1's image can never be pulled; worker 0 runs: the job is not ready. (In this
    # order: a pass that saw worker 0 running before worker 1 waiting would rightly say Running,
    # as Kubeflow does while a worker runs and none reports a problem.)
    admin.set_pod_phase(ns, second, "Pending", reason="ImagePullBackOff")
    admin.set_pod_phase(ns, first, "Running")
    seen = wait(
        lambda: (
            (job := admin.tfjob(ns, "stuck"))
            and (job["status"].get("replicaStatuses") or {}).get("Worker", {}).get("active") == 1
            and job
        ),
        "TaaS counting worker 0 active",
        timeout=30,
    )
    running = job_condition(seen, "Running")
    assert running and (running["status"], running["reason"]) == ("False", "ImagePullBackOff"), (
        running
    )

    evicted = wait_workload_condition(
        admin, ns, "stuck", "Evicted", "Kueue's eviction", TIMEOUT + 45
    )
    # Timed from the admission (the conditions' times are in whole seconds).
    waited = stamp(evicted["lastTransitionTime"]) - stamp(admitted["lastTransitionTime"])
    assert TIMEOUT - 1 <= waited <= TIMEOUT + 30, waited
    assert (evicted["status"], evicted["reason"]) == ("True", "PodsReadyTimeout"), evicted
    assert evicted["message"].startswith("Exceeded the PodsReady timeout"), evicted

    # TaaS: suspended (Kueue set runPolicy.suspend), every pod removed, active counts 0.
    suspended = wait(
        lambda: condition(admin.tfjob(ns, "stuck"), "Suspended"), "the job Suspended", timeout=30
    )
    assert suspended["reason"] == "TFJobSuspended"
    wait(lambda: not live_pods(admin, ns, "stuck"), "its pods removed", timeout=30)
    job = admin.tfjob(ns, "stuck")
    assert job is not None and job["spec"]["runPolicy"]["suspend"] is True
    assert job_condition(job, "Running")["status"] == "False"
    assert suspended["lastTransitionTime"] >= evicted["lastTransitionTime"]
    assert all(s.get("active", 0) == 0 for s in job["status"]["replicaStatuses"].values())

    # Requeued: with the replicas inactive Kueue releases the quota and counts the requeue.
    requeued = wait_workload_condition(admin, ns, "stuck", "Requeued", "Kueue's requeue", 30)
    assert requeued["reason"] == "PodsReadyTimeout", requeued
    state = (workload(admin, ns, "stuck") or {})["status"].get("requeueState") or {}
    assert state.get("count") == 1, state
    assert workload_condition(admin, ns, "stuck", "QuotaReserved")["status"] == "False"

    # Why, on the TFJob: Kueue's Stopped event with its reason, TaaS's Suspended event.
    events = {(e["reason"], e["message"]) for e in admin.events(ns, "stuck")}
    assert any(r == "Stopped" and "Exceeded the PodsReady timeout" in m for r, m in events), events
    assert any(r == "TFJobSuspended" for r, _ in events), events
