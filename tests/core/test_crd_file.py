"""The CRD file carries the same validation messages as the pydantic side (no apiserver here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from taas_operator.api import messages

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml"


def _load(text: str) -> Any:
    """YAML with libyaml: the generated CRD is 200 kB, pure-Python parsing takes seconds."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _rules(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.extend(node.get("x-kubernetes-validations", []))
        for value in node.values():
            found.extend(_rules(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_rules(value))
    return found


def test_every_shared_message_is_a_cel_message():
    crd = _load(CRD.read_text())
    cel_messages = {rule["message"] for rule in _rules(crd)}
    shared = {
        messages.NAME_DNS1035,
        messages.NAME_TOO_LONG_FOR_REPLICAS,
        messages.UNKNOWN_REPLICA_TYPE,
        messages.DUPLICATE_REPLICA_TYPE,
        messages.CHIEF_AND_MASTER,
        messages.NO_REPLICA_SPECS,
        messages.NEGATIVE_REPLICAS,
        messages.TOO_MANY_REPLICAS,
        messages.TOO_MANY_REPLICAS_IN_TOTAL,
        messages.NO_CONTAINERS,
        messages.NO_TENSORFLOW_CONTAINER,
        messages.NO_IMAGE,
        messages.MIN_AVAILABLE_ABOVE_REPLICAS,
    }
    assert shared <= cel_messages
    assert all("fix:" in m for m in cel_messages)


def test_crd_shape():
    crd = _load(CRD.read_text())
    assert crd["metadata"]["name"] == "tfjobs.kubeflow.org"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"]["shortNames"] == ["tfj"]
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1"
    assert version["subresources"] == {
        "status": {},
        "scale": {  # kubectl scale / an HPA on the workers (docs/tfjob-api.md)
            "specReplicasPath": ".spec.tfReplicaSpecs.Worker.replicas",
            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
        },
    }
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns["State"] == ".status.state"
    assert columns["Reason"] == ".status.stateReason"
    assert columns["Age"] == ".metadata.creationTimestamp"
