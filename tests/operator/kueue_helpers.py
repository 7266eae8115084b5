"""Kueue's objects for the operator tests: a ResourceFlavor, a ClusterQueue with a quota and a
LocalQueue, made the way a cluster administrator makes them (docs/gang-scheduling.md); a queued
TFJob, and what Kueue and the operator made for it (its Workload, its live pods)."""

from __future__ import annotations

from typing import Any

from tests.harness.operator_run import (
    Api,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


def kueue_object(kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": kind,
        "metadata": {"name": name},
        **fields,
    }


def queues(
    admin: Api,
    ns: str,
    cpu: int,
    *,
    node_labels: dict[str, str] | None = None,
    preemption: bool = False,
) -> str:
    """A ResourceFlavor and ClusterQueue with `cpu` CPUs of quota, and a LocalQueue in `ns`
    pointing at it; returns the LocalQueue's name."""
    flavor, cluster_queue = unique("flavor"), unique("cq")
    admin.create(
        f"{KUEUE}/resourceflavors",
        kueue_object("ResourceFlavor", flavor, spec={"nodeLabels": node_labels or {}}),
    )
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
            }
        ],
    }
    if preemption:
        spec["preemption"] = {"withinClusterQueue": "LowerPriority"}
    admin.create(f"{KUEUE}/clusterqueues", kueue_object("ClusterQueue", cluster_queue, spec=spec))
    admin.create(
        f"{KUEUE}/namespaces/{ns}/localqueues",
        kueue_object("LocalQueue", "team", spec={"clusterQueue": cluster_queue}),
    )
    return "team"


def queued_job(name: str, queue: str, workers: int, cpu: str, priority: str = "") -> dict:
    container = {
        "name": "tensorflow",
        "image": "example.com/t:1",
        "resources": {"requests": {"cpu": cpu}},
    }
    job = tfjob(name, {"Worker": {"replicas": workers, "containers": [container]}})
    job["metadata"]["labels"] = {QUEUE_LABEL: queue}
    if priority:
        job["metadata"]["labels"][PRIORITY_LABEL] = priority
    return job


def workload(admin: Api, ns: str, job: str) -> dict[str, Any] | None:
    """Kueue's Workload for the TFJob (owned by it)."""
    for item in admin.get(f"{KUEUE}/namespaces/{ns}/workloads")["items"]:
        if any(o["name"] == job for o in item["metadata"].get("ownerReferences") or []):
            return dict(item)
    return None


def workload_condition(admin: Api, ns: str, job: str, type_: str) -> dict[str, Any] | None:
    for cond in ((workload(admin, ns, job) or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == type_:
            return dict(cond)
    return None


def wait_workload_condition(
    admin: Api, ns: str, job: str, type_: str, what: str, timeout: float, status: str | None = None
) -> dict[str, Any]:
    """Wait until the TFJob's Workload has a condition `type_` (with `status`, if given); return
    that condition."""

    def probe() -> dict[str, Any] | None:
        cond = workload_condition(admin, ns, job, type_)
        return cond if cond and (status is None or cond["status"] == status) else None

    return wait(probe, what, timeout=timeout)


def live_pods(admin: Api, ns: str, job: str) -> dict[str, dict[str, Any]]:
    return {
        n: p for n, p in admin.pods(ns, job).items() if not p["metadata"].get("deletionTimestamp")
    }
