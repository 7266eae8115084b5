"""Readers over parsed chart renders (lists of Kubernetes objects as dicts), and the RBAC rules
the operator is expected to need, one place for the render tests and the apiserver tests."""

from __future__ import annotations

from typing import Any

Docs = list[dict[str, Any]]
Rule = tuple[str, str, str]  # (apiGroup, resource, verb)

# What the operator does inside a watched namespace (see charts/taas/templates/_rbac_rules.tpl).
WORKLOAD_RULES: set[Rule] = {
    *(("kubeflow.org", "tfjobs", v) for v in ("get", "list", "watch", "delete")),
    ("kubeflow.org", "tfjobs/status", "update"),
    ("kubeflow.org", "tfjobs/finalizers", "update"),
    *(("", "pods", v) for v in ("list", "watch", "create", "delete")),
    *(("", "services", v) for v in ("get", "list", "watch", "create", "delete")),
    ("", "events", "create"),
    *(("apps", "deployments", v) for v in ("get", "create")),
    *(
        ("networking.k8s.io", "networkpolicies", v)
        for v in ("list", "watch", "create", "delete", "patch")
    ),
}
CLUSTER_RULES: set[Rule] = {
    *(("apiextensions.k8s.io", "customresourcedefinitions", v) for v in ("get", "list", "watch")),
    ("", "namespaces", "list"),
    ("", "namespaces", "watch"),
}
# Leader election: verbs on (Cluster)KopfPeering objects when replicaCount > 1.
PEERING_VERBS = ("get", "list", "watch", "patch")


def of_kind(docs: Docs, kind: str) -> Docs:
    """The objects of one kind."""
    return [doc for doc in docs if doc["kind"] == kind]


def one(docs: Docs, kind: str) -> dict[str, Any]:
    """The single object of `kind`; fails when there are none or several."""
    found = of_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, rendered {len(found)}"
    return found[0]


def rules(role: dict[str, Any]) -> set[Rule]:
    """Every (apiGroup, resource, verb) a Role or ClusterRole grants, expanded."""
    return {
        (group, resource, verb)
        for rule in role.get("rules", [])
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
        for verb in rule.get("verbs", [])
    }


def container_env(docs: Docs) -> dict[str, str]:
    """Plain `value` env of the operator container."""
    container = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return {env["name"]: env["value"] for env in container["env"] if "value" in env}
