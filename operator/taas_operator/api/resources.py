"""Where each Kubernetes resource TaaS reads or writes lives on the apiserver: the operator, the
client's watches and the dashboard build their resource paths here. (Not every path: the review
APIs stay in the dashboard, the service proxy's in `taas tensorboard`'s proxy, and the client's
official kubernetes package builds its own.)

    Kind(group, version, plural).path(namespace="", name="", sub="") -> str
    TFJOB, POD, SERVICE, POLICY, EVENT, CONFIG_MAP, POD_GROUP, DEPLOYMENT   # the kinds TaaS touches

Each namespace and name goes through `api.names.segment`, so a value such as `..%2F..` or `a/b`
stays one path segment of the resource it names and can never reach another path of the
apiserver (its Secrets, say). Values from outside (a dashboard URL, a flag) are also checked as
Kubernetes names before any request is made (`api.names.check_namespace` / `check_name`).
"""

from __future__ import annotations

from dataclasses import dataclass

from taas_operator.api.constants import GROUP, PLURAL, VERSION
from taas_operator.api.names import segment


@dataclass(frozen=True)
class Kind:
    """A namespaced resource: where it lives and how RBAC names it."""

    group: str
    version: str
    plural: str

    def path(self, namespace: str = "", name: str = "", sub: str = "") -> str:
        """The URL path; every namespace when `namespace` is empty (a cluster-wide list)."""
        base = "/api/v1" if not self.group else f"/apis/{self.group}/{self.version}"
        if namespace:
            base = f"{base}/namespaces/{segment(namespace)}"
        path = f"{base}/{self.plural}"
        return path + (f"/{segment(name)}" if name else "") + (f"/{segment(sub)}" if sub else "")

    def rbac_name(self, sub: str = "") -> str:
        resource = self.plural + (f"/{sub}" if sub else "")
        return f"{resource} (apiGroup {self.group!r})" if self.group else resource


TFJOB = Kind(GROUP, VERSION, PLURAL)
POD = Kind("", "v1", "pods")
SERVICE = Kind("", "v1", "services")
POLICY = Kind("networking.k8s.io", "v1", "networkpolicies")
EVENT = Kind("", "v1", "events")
CONFIG_MAP = Kind("", "v1", "configmaps")  # a program's file (`taas submit PROGRAM.py`)
POD_GROUP = Kind("scheduling.x-k8s.io", "v1alpha1", "podgroups")  # scheduler-plugins' gangs
DEPLOYMENT = Kind("apps", "v1", "deployments")  # a TFJob's TensorBoard
