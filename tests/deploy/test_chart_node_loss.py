"""The chart keeps TaaS working when a node dies (issue 45): the operator's own pod tolerates a
lost node 30 s, not Kubernetes' 300 s; with more than one replica the replicas prefer different
nodes and a drain takes one at a time. Rendered by real Helm, as tests/deploy/test_chart.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.deploy.rendered import Docs, of_kind, one

pytestmark = pytest.mark.timeout(180)

Render = Callable[..., Docs]
NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"


def _lost(key: str, seconds: int = 30) -> dict[str, Any]:
    return {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}


def _pod(docs: Docs) -> dict[str, Any]:
    return one(docs, "Deployment")["spec"]["template"]["spec"]


def test_the_operator_tolerates_a_lost_node_30_seconds(render_docs: Render) -> None:
    """Defaults: both lost-node taints, 30 s; one replica: no anti-affinity, no budget."""
    docs = render_docs()
    pod = _pod(docs)
    assert pod["tolerations"] == [_lost(NOT_READY), _lost(UNREACHABLE)]
    assert "affinity" not in pod and not of_kind(docs, "PodDisruptionBudget")
    assert _pod(render_docs("operator.nodeLostTolerationSeconds=12"))["tolerations"] == [
        _lost(NOT_READY, 12),
        _lost(UNREACHABLE, 12),
    ]
    assert "tolerations" not in _pod(render_docs("operator.nodeLostTolerationSeconds=0"))


def test_a_toleration_of_the_key_in_values_stands(render_docs: Render) -> None:
    """`tolerations` naming a lost-node taint (or every key) is kept as given, not doubled."""
    own = "tolerations[0].key=node.kubernetes.io/unreachable"
    pod = _pod(render_docs(own, "tolerations[0].operator=Exists"))
    assert pod["tolerations"] == [{"key": UNREACHABLE, "operator": "Exists"}, _lost(NOT_READY)]
    pod = _pod(render_docs("tolerations[0].operator=Exists"))
    assert pod["tolerations"] == [{"operator": "Exists"}]
    schedule_only = ("tolerations[0].key=dedicated", "tolerations[0].effect=NoSchedule")
    pod = _pod(render_docs(*schedule_only, "tolerations[0].operator=Exists"))
    assert [t.get("key") for t in pod["tolerations"]] == ["dedicated", NOT_READY, UNREACHABLE]


def test_replicas_prefer_different_nodes_and_drain_one_at_a_time(render_docs: Render) -> None:
    """replicaCount 2: a preferred podAntiAffinity on kubernetes.io/hostname between the
    operator's own pods, and a PodDisruptionBudget of maxUnavailable 1 over the same pods."""
    docs = render_docs("replicaCount=2", "nodeSelector.pool=system")
    deployment = one(docs, "Deployment")
    selector = deployment["spec"]["selector"]["matchLabels"]
    pod = _pod(docs)
    (preferred,) = pod["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert preferred["weight"] == 100
    assert preferred["podAffinityTerm"] == {
        "labelSelector": {"matchLabels": selector},
        "topologyKey": "kubernetes.io/hostname",
    }
    assert (
        "requiredDuringSchedulingIgnoredDuringExecution" not in pod["affinity"]["podAntiAffinity"]
    )
    assert pod["tolerations"] == [_lost(NOT_READY), _lost(UNREACHABLE)]
    budget = one(docs, "PodDisruptionBudget")
    assert budget["apiVersion"] == "policy/v1"
    assert budget["metadata"]["name"] == deployment["metadata"]["name"]
    assert budget["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert budget["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": selector}}


def test_affinity_in_values_is_kept_and_its_anti_affinity_wins(render_docs: Render) -> None:
    """A nodeAffinity in `affinity` is kept beside the chart's anti-affinity; a podAntiAffinity
    there replaces the chart's."""
    node_affinity = (
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0]"
    )
    docs = render_docs(
        "replicaCount=2",
        f"{node_affinity}.key=pool",
        f"{node_affinity}.operator=In",
        f"{node_affinity}.values={{system}}",
    )
    affinity = _pod(docs)["affinity"]
    assert set(affinity) == {"nodeAffinity", "podAntiAffinity"}
    term = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["system"]
    theirs = "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
    affinity = _pod(
        render_docs("replicaCount=2", f"{theirs}.topologyKey=topology.kubernetes.io/zone")
    )["affinity"]
    assert affinity == {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "topology.kubernetes.io/zone"}
            ]
        }
    }
