"""The chart's dashboard option rendered by real Helm: off by default (and so absent from
manifests/install.yaml), read-only with reads-only RBAC when on, writes only with
`dashboard.actions.enabled`, and then reachable through `kubectl port-forward` only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rendered import Docs, of_kind, rules

pytestmark = pytest.mark.timeout(180)
Render = Callable[..., Docs]
READS = {
    *(("kubeflow.org", "tfjobs", v) for v in ("get", "list", "watch")),
    *(("", r, v) for r in ("pods", "pods/log", "events") for v in ("get", "list", "watch")),
}
WRITES = {("kubeflow.org", "tfjobs", v) for v in ("patch", "delete", "create")}


def _dashboard(docs: Docs, kind: str) -> list[dict[str, Any]]:
    return [
        d
        for d in of_kind(docs, kind)
        if (d["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == "dashboard"
    ]


def test_off_by_default(render_docs: Render) -> None:
    docs = render_docs()
    assert not [d for d in docs if d["metadata"]["name"].endswith("-dashboard")]


def test_read_only_by_default_when_enabled(render_docs: Render) -> None:
    docs = render_docs("dashboard.enabled=true")
    (deployment,) = _dashboard(docs, "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["taas", "dashboard"]
    assert "--read-only" in container["args"] and "--host=$(POD_IP)" in container["args"]
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "taas-dashboard"
    (role,) = _dashboard(docs, "ClusterRole")
    assert rules(role) == READS  # reads only; never secrets
    (binding,) = _dashboard(docs, "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "taas-dashboard", "namespace": "taas-system"}
    ]
    assert _dashboard(docs, "Service")
    (policy,) = _dashboard(docs, "NetworkPolicy")
    assert policy["spec"]["ingress"] == []  # nobody over the network unless allowFrom says so


def test_actions_only_through_port_forward(render_docs: Render) -> None:
    docs = render_docs("dashboard.enabled=true", "dashboard.actions.enabled=true")
    (deployment,) = _dashboard(docs, "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--host=127.0.0.1" in args and "--read-only" not in args
    assert not _dashboard(docs, "Service")  # no way in but kubectl port-forward
    (role,) = _dashboard(docs, "ClusterRole")
    assert rules(role) == READS | WRITES
    # allowFrom applies to the read-only page only: actions never get a network path.
    docs = render_docs(
        "dashboard.enabled=true",
        "dashboard.actions.enabled=true",
        "dashboard.allowFrom[0].podSelector.matchLabels.app=proxy",
    )
    (policy,) = _dashboard(docs, "NetworkPolicy")
    assert policy["spec"]["ingress"] == []


def test_namespaces_give_roles_and_flags(render_docs: Render) -> None:
    docs = render_docs(
        "dashboard.enabled=true",
        "dashboard.namespaces={team-a,team-b}",
        "dashboard.allowFrom[0].podSelector.matchLabels.app=proxy",
    )
    assert not _dashboard(docs, "ClusterRole")
    roles = _dashboard(docs, "Role")
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["team-a", "team-b"]
    assert all(rules(r) == READS for r in roles)
    (deployment,) = _dashboard(docs, "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--namespace=team-a" in args and "--namespace=team-b" in args
    (policy,) = _dashboard(docs, "NetworkPolicy")
    assert policy["spec"]["ingress"][0]["from"] == [
        {"podSelector": {"matchLabels": {"app": "proxy"}}}
    ]


def test_schema_refuses_a_misspelt_dashboard_value(render_docs: Render) -> None:
    from sync_chart import RenderError

    with pytest.raises(RenderError, match="readonly"):
        render_docs("dashboard.readonly=true")
