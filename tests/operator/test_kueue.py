"""Issue 23, item 3a: TFJobs queued, admitted, preempted and resumed by a real Kueue (its
`kubeflow.org/tfjob` integration), TaaS's operator unchanged.

Real: kube-apiserver + etcd, the operator process, Kueue v0.19.2's manager built from its Go
module with its own CRDs, RBAC (its ClusterRole, bound to the identity it runs as) and webhook
configurations, reached by the apiserver over TLS on 127.0.0.1 with certificates made by
`taas_controlplane` (the `SchedulingStack` the one-node and simulated clusters use). Not
running: kubelet and scheduler (pods stay unplaced; the tests write their phase), garbage
collector. ClusterQueues are cluster-scoped: each test makes its own, named uniquely.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from taas_controlplane.cluster.scheduling import SchedulingOptions, SchedulingStack
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from tests.builds import needs
from tests.harness.operator_run import (
    Api,
    StartOperator,
    condition,
    new_namespace,
    unique,
)
from tests.harness.waiting import wait
from tests.operator.kueue_helpers import (
    KUEUE,
    kueue_object,
    live_pods,
    queued_job,
    queues,
    wait_workload_condition,
    workload_condition,
)

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
@needs("kueue")
def kueue(
    control_plane: ControlPlane, tfjob_crd: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchedulingStack]:
    """Kueue's manager with the TFJob integration on; its webhooks removed at the end."""
    options = SchedulingOptions(kueue=True)
    with SchedulingStack(control_plane, tmp_path_factory.mktemp("kueue"), options) as stack:
        yield stack


def finish(admin: Api, ns: str, job: str) -> None:
    """Play the kubelet: every pod of the job runs, then succeeds, worker 0 last (its success
    is the job's; the operator then removes what still runs)."""
    for phase in ("Running", "Succeeded"):
        for pod in sorted(live_pods(admin, ns, job), key=lambda name: name.endswith("-0")):
            admin.set_pod_phase(ns, pod, phase)


def test_a_second_job_waits_suspended_until_the_first_frees_the_quota(
    admin: Api, kueue: SchedulingStack, start_operator: StartOperator
) -> None:
    ns = new_namespace(admin, "kueue")
    start_operator(ns)
    queue = queues(admin, ns, cpu=4)
    first, second = unique("first"), unique("second")

    # Each job wants 2 workers x 2 CPUs: the queue's 4 CPUs admit one at a time.
    admin.create_tfjob(ns, queued_job(first, queue, 2, "2"))
    wait(lambda: len(live_pods(admin, ns, first)) == 2, "the first job's pods", timeout=60)
    assert workload_condition(admin, ns, first, "Admitted")["status"] == "True"

    created = admin.create_tfjob(ns, queued_job(second, queue, 2, "2"))
    # Kueue's webhook suspended it at creation, before the operator could see it.
    assert created["spec"]["runPolicy"]["suspend"] is True
    suspended = wait(
        lambda: condition(admin.tfjob(ns, second), "Suspended"),
        "the second job Suspended",
        timeout=60,
    )
    assert suspended["reason"] == "TFJobSuspended"
    pending = wait_workload_condition(
        admin, ns, second, "QuotaReserved", "Kueue's reason the second job waits", 60, "False"
    )
    assert "insufficient unused quota for cpu" in pending["message"], pending
    assert not admin.pods(ns, second)

    # The first job finishes: its Workload is finished, the second is admitted and runs.
    finish(admin, ns, first)
    wait(lambda: condition(admin.tfjob(ns, first), "Succeeded"), "the first job Succeeded")
    wait(lambda: len(live_pods(admin, ns, second)) == 2, "the second job's pods", timeout=60)
    job = admin.tfjob(ns, second)
    assert job is not None and job["spec"]["runPolicy"]["suspend"] is False
    resumed = next(c for c in job["status"]["conditions"] if c["type"] == "Suspended")
    assert (resumed["status"], resumed["reason"]) == ("False", "TFJobResumed")
    finished = workload_condition(admin, ns, first, "Finished")
    admitted = workload_condition(admin, ns, second, "Admitted")
    assert finished and admitted and admitted["status"] == "True"
    # Never both at once: the second was admitted only after the first had finished.
    assert admitted["lastTransitionTime"] >= finished["lastTransitionTime"]
    finish(admin, ns, second)
    wait(lambda: condition(admin.tfjob(ns, second), "Succeeded"), "the second job Succeeded")


def test_a_higher_priority_job_preempts_a_lower_one_which_resumes_later(
    admin: Api, kueue: SchedulingStack, start_operator: StartOperator
) -> None:
    ns = new_namespace(admin, "kueue")
    start_operator(ns)
    # The flavor's node labels are what Kueue writes into the templates at admission.
    queue = queues(admin, ns, cpu=4, node_labels={"taas.dev/pool": "a"}, preemption=True)
    low_class, high_class = unique("low"), unique("high")
    for name, value in ((low_class, 100), (high_class, 1000)):
        admin.create(
            f"{KUEUE}/workloadpriorityclasses",
            kueue_object("WorkloadPriorityClass", name, value=value),
        )
    low, high = unique("low"), unique("high")

    admin.create_tfjob(ns, queued_job(low, queue, 2, "2", low_class))
    pods = wait(lambda: len(p := live_pods(admin, ns, low)) == 2 and p, "low's pods", timeout=60)
    for pod in pods.values():
        # Kueue's admission put the flavor's node labels in the template; TaaS's pods carry them.
        assert pod["spec"].get("nodeSelector") == {"taas.dev/pool": "a"}
        admin.set_pod_phase(ns, pod["metadata"]["name"], "Running")
    wait(lambda: condition(admin.tfjob(ns, low), "Running"), "low Running")

    admin.create_tfjob(ns, queued_job(high, queue, 2, "2", high_class))
    # Kueue evicts the lower-priority job (suspend: true); TaaS removes its pods and says so.
    suspended = wait(
        lambda: condition(admin.tfjob(ns, low), "Suspended"),
        "low preempted and Suspended",
        timeout=60,
    )
    assert suspended["reason"] == "TFJobSuspended"
    evicted = workload_condition(admin, ns, low, "Evicted")
    assert evicted and evicted["status"] == "True" and evicted["reason"] == "Preempted", evicted
    wait(lambda: not live_pods(admin, ns, low), "low's pods removed")
    job = admin.tfjob(ns, low)
    assert job is not None
    assert not condition(job, "Running")
    assert all(s.get("active", 0) == 0 for s in job["status"]["replicaStatuses"].values())
    # Kueue restored the template it had changed at admission while the job waits.
    template = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    assert not template.get("nodeSelector")

    wait(lambda: len(live_pods(admin, ns, high)) == 2, "high's pods", timeout=60)
    finish(admin, ns, high)
    wait(lambda: condition(admin.tfjob(ns, high), "Succeeded"), "high Succeeded")

    # Readmitted: the same job, resumed, its pods made again from the template Kueue changed.
    pods = wait(lambda: len(p := live_pods(admin, ns, low)) == 2 and p, "low resumed", timeout=90)
    assert all(p["spec"].get("nodeSelector") == {"taas.dev/pool": "a"} for p in pods.values())
    job = admin.tfjob(ns, low)
    assert job is not None and not condition(job, "Suspended")
    finish(admin, ns, low)
    wait(lambda: condition(admin.tfjob(ns, low), "Succeeded"), "low Succeeded")
