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
        for v in ("get", "list", "watch", "create", "delete", "patch")
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


#: The label prefix that adds a ClusterRole's rules to Kubernetes' admin/edit/view roles.
AGGREGATE_LABEL = "rbac.authorization.k8s.io/aggregate-to-"


def user_roles(docs: Docs) -> Docs:
    """The ClusterRoles for people (aggregated into admin/edit/view), not for the operator."""
    return [
        role
        for role in of_kind(docs, "ClusterRole")
        if any(key.startswith(AGGREGATE_LABEL) for key in role["metadata"].get("labels") or {})
    ]


def operator_roles(docs: Docs, kind: str = "ClusterRole") -> Docs:
    """The Roles or ClusterRoles the chart makes for the operator (every one but the users')."""
    users = {role["metadata"]["name"] for role in user_roles(docs)}
    return [role for role in of_kind(docs, kind) if role["metadata"]["name"] not in users]


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
