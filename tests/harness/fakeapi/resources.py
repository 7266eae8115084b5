"""The resources the fake apiserver serves, and how each one behaves.

RESOURCES[(group, plural)] -> Resource     # the kinds TaaS reads or writes
parse_path("/api/v1/namespaces/ns/pods/p/status") -> Path | None   # None: no such path
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    status: bool = False  # has a status subresource
    generation: bool = False  # metadata.generation counts spec changes
    custom: bool = False  # a custom resource: an update must carry a resourceVersion

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def qualified(self) -> str:
        """How the apiserver names the resource in its messages: pods, tfjobs.kubeflow.org."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _table(*resources: Resource) -> dict[tuple[str, str], Resource]:
    return {(r.group, r.plural): r for r in resources}


RESOURCES = _table(
    Resource("", "v1", "namespaces", "Namespace", namespaced=False, status=True),
    Resource("", "v1", "pods", "Pod", status=True),
    Resource("", "v1", "services", "Service", status=True),
    Resource("", "v1", "events", "Event"),
    Resource("", "v1", "configmaps", "ConfigMap"),
    Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", generation=True),
    Resource("apps", "v1", "deployments", "Deployment", status=True, generation=True),
    Resource("coordination.k8s.io", "v1", "leases", "Lease"),
    Resource("kubeflow.org", "v1", "tfjobs", "TFJob", status=True, generation=True, custom=True),
)
#: scheduler-plugins' PodGroup: served only when its CRD is "installed" (`Store(pod_groups=True)`).
POD_GROUPS = Resource(
    "scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", True, True, True, True
)


@dataclass(frozen=True)
class Path:
    resource: Resource
    namespace: str  # "": every namespace (or a cluster-scoped resource)
    name: str
    sub: str


def parse_path(path: str, served: dict[tuple[str, str], Resource]) -> Path | None:
    """The resource a REST path names; None when the apiserver serves no such path."""
    parts = [unquote(p) for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    resource = served.get((group, rest[0]))
    if resource is None or (group and parts[2] != resource.version):
        return None
    if namespace and not resource.namespaced:
        return None
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if sub and (sub != "status" or not resource.status):
        return None
    return Path(resource, namespace, name, sub)
