"""The operator's default tolerations of a lost node (`--node-lost-toleration-seconds`): added to
every replica pod for each lost-node taint its template has no toleration of; the template's own
toleration stands as written; 0 adds none (Kubernetes' 300 s applies)."""

from __future__ import annotations

from typing import Any

from taas_operator.api import parse_tfjob
from taas_operator.api.constants import DEFAULT_NODE_LOST_TOLERATION_SECONDS
from taas_operator.planner import BuildOptions, desired_pods
from taas_operator.planner.tolerations import node_lost_tolerations
from taas_operator.settings import OperatorSettings

from .helpers import manifest

NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
OPERATOR = BuildOptions(node_lost_toleration_seconds=30)


def _ours(key: str, seconds: int = 30) -> dict[str, Any]:
    return {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}


def _pods(tolerations: dict[str, list[dict[str, Any]]], options: BuildOptions) -> list[dict]:
    """The pods of a PS + 2 workers job whose replica types' templates carry `tolerations`."""
    m = manifest({"PS": 1, "Worker": 2})
    for rtype, given in tolerations.items():
        m["spec"]["tfReplicaSpecs"][rtype]["template"]["spec"]["tolerations"] = given
    return desired_pods(parse_tfjob(m), options)


def test_the_operator_default_is_short_and_reaches_every_pod() -> None:
    """30 s by default, on both taints, on every replica pod, after the template's own."""
    assert OperatorSettings().node_lost_toleration_seconds == 30
    assert DEFAULT_NODE_LOST_TOLERATION_SECONDS == 30
    gpu = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    pods = _pods({"Worker": [gpu]}, OPERATOR)
    assert [p["spec"]["tolerations"] for p in pods] == [
        [_ours(NOT_READY), _ours(UNREACHABLE)],
        [gpu, _ours(NOT_READY), _ours(UNREACHABLE)],
        [gpu, _ours(NOT_READY), _ours(UNREACHABLE)],
    ]


def test_a_template_toleration_of_the_key_stands_unchanged_and_alone() -> None:
    """The node tests' 2 s (or a user's 600 s) is kept as written and not doubled; the other
    key still gets the default."""
    two = _ours(UNREACHABLE, 2)
    long_not_ready = {**_ours(NOT_READY, 600), "operator": "Equal", "value": ""}
    pods = _pods({"PS": [_ours(NOT_READY, 2), two], "Worker": [long_not_ready]}, OPERATOR)
    assert pods[0]["spec"]["tolerations"] == [_ours(NOT_READY, 2), two]
    assert pods[1]["spec"]["tolerations"] == [long_not_ready, _ours(UNREACHABLE)]
    keys = [t["key"] for t in pods[2]["spec"]["tolerations"]]
    assert keys.count(NOT_READY) == 1 and keys.count(UNREACHABLE) == 1


def test_a_toleration_of_every_key_or_without_effect_counts_as_the_templates() -> None:
    """As Kubernetes' DefaultTolerationSeconds decides: an empty key covers every taint (here
    forever: adding 30 s would cut it short, the shortest matching toleration wins), an empty
    effect every effect; a NoSchedule toleration of the key does not cover NoExecute."""
    everything = {"operator": "Exists"}
    assert node_lost_tolerations([everything], 30) == [everything]
    no_effect = {"key": UNREACHABLE, "operator": "Exists"}
    assert node_lost_tolerations([no_effect], 30) == [no_effect, _ours(NOT_READY)]
    schedule_only = {"key": NOT_READY, "operator": "Exists", "effect": "NoSchedule"}
    assert node_lost_tolerations([schedule_only], 30) == [
        schedule_only,
        _ours(NOT_READY),
        _ours(UNREACHABLE),
    ]


def test_zero_adds_none() -> None:
    """0 (BuildOptions' default: `taas run`, and the operator with 0) leaves the template's
    tolerations, or their absence, as they are; Kubernetes then gives its 300 s."""
    for options in (BuildOptions(), BuildOptions(node_lost_toleration_seconds=0)):
        pods = _pods({"Worker": [_ours(UNREACHABLE, 2)]}, options)
        assert "tolerations" not in pods[0]["spec"]
        assert pods[1]["spec"]["tolerations"] == [_ours(UNREACHABLE, 2)]
    assert node_lost_tolerations([], 0) == []


def test_the_template_is_not_changed() -> None:
    """The TFJob's own template keeps its list (pods are built from a copy)."""
    m = manifest({"Worker": 1})
    given = [_ours(UNREACHABLE, 2)]
    m["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["tolerations"] = given
    job = parse_tfjob(m)
    desired_pods(job, OPERATOR)
    template = job.spec.tf_replica_specs["Worker"].template
    assert template["spec"]["tolerations"] == [_ours(UNREACHABLE, 2)]
