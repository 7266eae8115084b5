"""The chart's dashboard option rendered by real Helm: off by default (and so absent from
manifests/install.yaml); when on, every viewer signs in with their own Kubernetes token
(`--auth kubernetes`) and the dashboard's ServiceAccount is granted nothing but listing namespace
names (only when `dashboard.namespaces` is empty), so no viewer acts with a shared identity;
read-only unless `dashboard.actions.enabled`; Host names pinned."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.deploy.rendered import Docs, of_kind

pytestmark = pytest.mark.timeout(180)
Render = Callable[..., Docs]
RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


def _dashboard(docs: Docs, kind: str) -> list[dict[str, Any]]:
    return [
        d
        for d in of_kind(docs, kind)
        if (d["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == "dashboard"
    ]


def _args(docs: Docs) -> list[str]:
    (deployment,) = _dashboard(docs, "Deployment")
    return list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])


def _only_namespace_names(docs: Docs) -> None:
    """The dashboard's one right: listing namespace names, bound to its own ServiceAccount."""
    assert not _dashboard(docs, "Role") and not _dashboard(docs, "RoleBinding")
    (role,) = _dashboard(docs, "ClusterRole")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]
    (binding,) = _dashboard(docs, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "taas-dashboard", "namespace": "taas-system"}
    ]


def test_off_by_default(render_docs: Render) -> None:
    docs = render_docs()
    assert not [d for d in docs if d["metadata"]["name"].endswith("-dashboard")]


def test_read_only_by_default_when_enabled(render_docs: Render) -> None:
    docs = render_docs("dashboard.enabled=true")
    (deployment,) = _dashboard(docs, "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["taas", "dashboard"]
    args = _args(docs)
    assert "--auth=kubernetes" in args and "--read-only" in args
    assert "--allow-host=$(POD_IP)" in args
    assert "--allow-host=taas-dashboard.taas-system.svc" in args
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "taas-dashboard"
    _only_namespace_names(docs)  # the ServiceAccount reads nothing else: viewers act as themselves
    assert _dashboard(docs, "Service")
    (policy,) = _dashboard(docs, "NetworkPolicy")
    assert policy["spec"]["ingress"] == []  # nobody over the network unless allowFrom says so


def test_actions_are_the_viewers_own(render_docs: Render) -> None:
    docs = render_docs(
        "dashboard.enabled=true",
        "dashboard.actions.enabled=true",
        "dashboard.allowedHosts={dash.example.org}",
    )
    args = _args(docs)
    assert "--auth=kubernetes" in args and "--read-only" not in args
    assert "--allow-host=dash.example.org" in args
    _only_namespace_names(docs)  # never a shared write identity


def test_namespaces_give_flags_and_allow_from_a_policy(render_docs: Render) -> None:
    docs = render_docs(
        "dashboard.enabled=true",
        "dashboard.namespaces={team-a,team-b}",
        "dashboard.allowFrom[0].podSelector.matchLabels.app=proxy",
    )
    for kind in RBAC_KINDS:
        assert not _dashboard(docs, kind), kind
    args = _args(docs)
    assert "--namespace=team-a" in args and "--namespace=team-b" in args
    (policy,) = _dashboard(docs, "NetworkPolicy")
    assert policy["spec"]["ingress"][0]["from"] == [
        {"podSelector": {"matchLabels": {"app": "proxy"}}}
    ]


def test_schema_refuses_a_misspelt_dashboard_value(render_docs: Render) -> None:
    from tests.deploy.sync_chart import RenderError

    with pytest.raises(RenderError, match="readonly"):
        render_docs("dashboard.readonly=true")
