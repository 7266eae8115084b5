"""What the apiserver fills in on a write (its defaulting), for the kinds whose filled-in fields
the operator reads or compares: a desired spec that leaves out a defaulted field would differ
from the stored one on the real apiserver too, and so it does here.

    apply_defaults(resource, obj, old=None)   # in place; `old`: the stored object of an update
    initial_status(resource, obj) -> dict | None
"""

from __future__ import annotations

import itertools
from typing import Any

from tests.harness.fakeapi.resources import Resource

_CLUSTER_IPS = (f"10.96.{n // 250}.{n % 250 + 1}" for n in itertools.count(1))


def apply_defaults(resource: Resource, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if resource.plural == "pods":
        _pod(spec)
    elif resource.plural == "services":
        _service(spec, (old or {}).get("spec") or {})
    elif resource.plural == "networkpolicies":
        _policy(spec)


def initial_status(resource: Resource, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The status a created object starts with (a status in the create body is dropped)."""
    if resource.plural == "pods":
        return {"phase": "Pending", "qosClass": _qos(obj.get("spec") or {})}
    if resource.plural == "services":
        return {"loadBalancer": {}}
    if resource.plural == "namespaces":
        return {"phase": "Active"}
    return None


def _pod(spec: dict[str, Any]) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        image = str(container.get("image") or "")
        tagged = ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest")
        container.setdefault("imagePullPolicy", "IfNotPresent" if tagged else "Always")
        container.setdefault("resources", {})
        for port in container.get("ports") or []:
            port.setdefault("protocol", "TCP")


def _qos(spec: dict[str, Any]) -> str:
    resources = [c.get("resources") or {} for c in spec.get("containers") or []]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        {"cpu", "memory"} <= set(r.get("limits") or {})
        and all((r.get("limits") or {}).get(k) == v for k, v in (r.get("requests") or {}).items())
        for r in resources
    )
    return "Guaranteed" if guaranteed else "Burstable"


def _service(spec: dict[str, Any], old: dict[str, Any]) -> None:
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    if "clusterIP" not in spec:
        spec["clusterIP"] = old.get("clusterIP") or next(_CLUSTER_IPS)
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))


def _policy(spec: dict[str, Any]) -> None:
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
    for rule in (spec.get("ingress") or []) + (spec.get("egress") or []):
        for port in rule.get("ports") or []:
            port.setdefault("protocol", "TCP")
