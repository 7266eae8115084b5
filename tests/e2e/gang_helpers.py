"""What the gang and queue tests on the node share: the schedulers started on the shared cluster
with the chart switched to gang scheduling, the node's free CPU, small barrier jobs, Kueue's
objects.

    scheduling_on(cluster, directory[, pods_ready_timeout]) -> context manager
                                                           # stack + chart value, both undone
    free_millicpu(cluster) -> int                          # allocatable minus pods' requests
    barrier_job(name, workers, millicpu, hold_s=3, ...) -> dict   # workers wait for each other
    kueue_queue(cluster, cpu_milli, preemption=False) -> (cluster_queue, cleanup)
    scheduled_at(pod) / finished_at(pod)
    workload_of(cluster, ns, job) -> Kueue's Workload of the TFJob, or None
    workload_condition(cluster, ns, job, type_) -> one of its conditions, or None
    wait_job_condition(cluster, ns, job, type_, what, status=, reason=) -> the condition
    wait_workload_condition(cluster, ns, job, type_, status, what) -> the Workload's condition
    assert_queued_for_quota(cluster, ns, job)              # suspended, no quota, no pods
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from taas_controlplane.build.busybox_images import TOOLBOX_IMAGE
from taas_controlplane.cluster.cluster import Cluster
from taas_controlplane.cluster.scheduling import SchedulingOptions, SchedulingStack
from tests.harness.real_cluster import (
    SESSION_VALUES,
    condition,
    get_json,
    install_chart,
    job_pods,
)
from tests.harness.waiting import wait

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
GANG_VALUE = "gangScheduling.schedulerName=scheduler-plugins"
#: Each worker listens on its TensorFlow port, waits until it reaches every peer (WORKER_HOSTS,
#: from the operator), holds, then exits 0: what synchronous training does with its peers.
BARRIER = """
(while true; do nc -l -p 2222 </dev/null >/dev/null 2>&1; done) &
for peer in $(echo "$WORKER_HOSTS" | tr ',' ' '); do
  until nc -w 1 "${peer%:*}" "${peer##*:}" </dev/null >/dev/null 2>&1; do sleep 1; done
done
echo "all $(echo "$WORKER_HOSTS" | tr ',' ' ' | wc -w) workers reached"
sleep "$HOLD_SECONDS"
"""


@contextmanager
def scheduling_on(
    cluster: Cluster, directory: Path, pods_ready_timeout: float | None = None
) -> Iterator[SchedulingStack]:
    """scheduler-plugins (scheduler + controller) and Kueue (TFJob integration; its
    waitForPodsReady timeout if given) on the shared cluster, and the session's chart release
    upgraded with gangScheduling.schedulerName; at the end the release goes back to the
    session's values and the schedulers stop (Kueue's webhooks removed first)."""
    options = SchedulingOptions(
        coscheduling=True, kueue=True, kueue_pods_ready_timeout=pods_ready_timeout
    )
    with SchedulingStack(cluster.plane, directory, options) as stack:
        install_chart(cluster, *SESSION_VALUES, GANG_VALUE)
        try:
            yield stack
        finally:
            install_chart(cluster, *SESSION_VALUES)


def _millicpu(value: str) -> int:
    return int(value[:-1]) if value.endswith("m") else int(float(value) * 1000)


def _node_pods(cluster: Cluster) -> list[dict[str, Any]]:
    selector = f"spec.nodeName={cluster.node_name}"
    return list(get_json(cluster, "pods", "-A", "--field-selector", selector)["items"])


def free_millicpu(cluster: Cluster, settle_s: float = 120.0) -> int:
    """The node's allocatable CPU minus what its live pods request, once no pod on it is being
    deleted (an earlier test's pods, whose CPU is about to be free)."""
    wait(
        lambda: not any(p["metadata"].get("deletionTimestamp") for p in _node_pods(cluster)),
        "the node's terminating pods gone",
        timeout=settle_s,
        every=1.0,
    )
    node = get_json(cluster, "node", cluster.node_name)
    free = _millicpu(node["status"]["allocatable"]["cpu"])
    for pod in _node_pods(cluster):
        if pod["status"].get("phase") in ("Succeeded", "Failed"):
            continue
        for container in pod["spec"]["containers"]:
            requests = (container.get("resources") or {}).get("requests") or {}
            free -= _millicpu(requests.get("cpu", "0"))
    return free


def barrier_job(
    name: str,
    workers: int,
    millicpu: int,
    *,
    hold_s: int = 3,
    labels: dict[str, str] | None = None,
    template_spec: dict[str, Any] | None = None,
    scheduling_policy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A TFJob of `workers` busybox workers running BARRIER, each requesting `millicpu`."""
    container = {
        "name": "tensorflow",
        "image": TOOLBOX_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", BARRIER],
        "env": [{"name": "HOLD_SECONDS", "value": str(hold_s)}],
        "resources": {"requests": {"cpu": f"{millicpu}m", "memory": "16Mi"}},
    }
    run_policy: dict[str, Any] = {"cleanPodPolicy": "None"}
    if scheduling_policy is not None:
        run_policy["schedulingPolicy"] = scheduling_policy
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "successPolicy": "AllWorkers",
            "runPolicy": run_policy,
            "tfReplicaSpecs": {
                "Worker": {
                    "replicas": workers,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [container], **(template_spec or {})}},
                }
            },
        },
    }


def kueue_queue(
    cluster: Cluster, ns: str, cpu_milli: int, preemption: bool = False
) -> tuple[str, Callable[[], None]]:
    """A ResourceFlavor and ClusterQueue of `cpu_milli` CPU (memory to spare) and a LocalQueue
    `team` in `ns`; returns the LocalQueue's name and how to delete the cluster-scoped ones."""
    suffix = uuid.uuid4().hex[:6]
    flavor, queue = f"e2e-flavor-{suffix}", f"e2e-queue-{suffix}"
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory"],
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [
                            {"name": "cpu", "nominalQuota": f"{cpu_milli}m"},
                            {"name": "memory", "nominalQuota": "8Gi"},
                        ],
                    }
                ],
            }
        ],
    }
    if preemption:
        spec["preemption"] = {"withinClusterQueue": "LowerPriority"}
    api = "kueue.x-k8s.io/v1beta2"
    objects = [
        {"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": flavor}},
        {"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": queue}, "spec": spec},
        {
            "apiVersion": api,
            "kind": "LocalQueue",
            "metadata": {"name": "team", "namespace": ns},
            "spec": {"clusterQueue": queue},
        },
    ]
    cluster.kubectl(
        "apply", "-f", "-", input=json.dumps({"kind": "List", "apiVersion": "v1", "items": objects})
    )

    def cleanup() -> None:
        cluster.kubectl(
            "delete", "--ignore-not-found", "--wait=false",
            f"clusterqueue/{queue}", f"resourceflavor/{flavor}", check=False,
        )  # fmt: skip

    return "team", cleanup


def _stamp(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def scheduled_at(pod: dict[str, Any]) -> float | None:
    for cond in pod["status"].get("conditions") or []:
        if cond["type"] == "PodScheduled" and cond["status"] == "True":
            return _stamp(cond["lastTransitionTime"])
    return None


def finished_at(pod: dict[str, Any]) -> float | None:
    for status in pod["status"].get("containerStatuses") or []:
        ended = (status.get("state") or {}).get("terminated") or {}
        if ended.get("finishedAt"):
            return _stamp(ended["finishedAt"])
    return None


def workload_of(cluster: Cluster, ns: str, job: str) -> dict[str, Any] | None:
    for item in get_json(cluster, "workloads.kueue.x-k8s.io", "-n", ns)["items"]:
        if any(o["name"] == job for o in item["metadata"].get("ownerReferences") or []):
            return dict(item)
    return None


def workload_condition(cluster: Cluster, ns: str, job: str, type_: str) -> dict[str, Any] | None:
    """The condition `type_` of Kueue's Workload of the TFJob, whatever its status."""
    conditions = ((workload_of(cluster, ns, job) or {}).get("status") or {}).get("conditions")
    return next((dict(c) for c in conditions or [] if c["type"] == type_), None)


def _matching(
    cond: dict[str, Any] | None, status: str | None, reason: str | None
) -> dict[str, Any] | None:
    if cond is None or (status is not None and cond["status"] != status):
        return None
    return cond if reason is None or cond.get("reason") == reason else None


def wait_job_condition(
    cluster: Cluster,
    ns: str,
    job: str,
    type_: str,
    what: str,
    *,
    status: str | None = None,
    reason: str | None = None,
    timeout: float = 120.0,
) -> dict[str, Any]:
    """Wait until the TFJob has a condition `type_` with `status` and `reason` (each if given);
    return that condition."""

    def probe() -> dict[str, Any] | None:
        found = condition(get_json(cluster, "-n", ns, "tfjob", job), type_)
        return _matching(found, status, reason)

    return dict(wait(probe, what, timeout=timeout, every=1.0))


def wait_workload_condition(
    cluster: Cluster,
    ns: str,
    job: str,
    type_: str,
    status: str,
    what: str,
    timeout: float = 120.0,
) -> dict[str, Any]:
    """Wait until Kueue's Workload of the TFJob has a condition `type_` with `status`; return
    that condition."""

    def probe() -> dict[str, Any] | None:
        return _matching(workload_condition(cluster, ns, job, type_), status, None)

    return dict(wait(probe, what, timeout=timeout, every=1.0))


def assert_queued_for_quota(cluster: Cluster, ns: str, job: str) -> None:
    """The queued TFJob waits for quota: Suspended by Kueue (TFJobSuspended), its Workload's
    QuotaReserved False for want of CPU, and no pod of it."""
    suspended = wait_job_condition(cluster, ns, job, "Suspended", f"{job} Suspended", status="True")
    assert suspended["reason"] == "TFJobSuspended", suspended
    why = wait_workload_condition(cluster, ns, job, "QuotaReserved", "False", "Kueue's reason")
    assert "insufficient unused quota for cpu" in why["message"], why
    assert not job_pods(cluster, ns, job)
