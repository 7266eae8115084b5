"""Kueue's objects for the operator tests: a ResourceFlavor, a ClusterQueue with a quota and a
LocalQueue, made the way a cluster administrator makes them (docs/gang-scheduling.md)."""

from __future__ import annotations

from typing import Any

from tests.operator.operator_harness import Api, unique

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
