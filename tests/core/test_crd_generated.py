"""The TFJob CRD is generated (tools/taas_controlplane/crd), not written by hand: the committed
CRD, its chart copy and the schema `taas validate` ships are a fresh generation from base.yaml
and the cached OpenAPI of the Kubernetes version the project builds; the pod template carries
the structural schema controller-gen would write; every hand-written rule survives. No
apiserver here: tests/api/test_crd.py compares the cache with what the apiserver serves."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from taas_controlplane.build.binaries import KUBERNETES_VERSION
from taas_controlplane.crd.generate import BASE, CRD_FILE, INPUT, rendered, stale
from taas_controlplane.crd.structural_schema import SchemaError, structural_schema
from taas_operator.api.schema import template_schema, tfjob_schema
from taas_operator.api.structural import check_schema

#: What client-side `kubectl apply` can store in its last-applied annotation.
ANNOTATION_LIMIT = 262144


def _load(text: str) -> Any:
    """YAML with libyaml: the generated CRD is 200 kB, pure-Python parsing takes seconds."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _walk(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        found.append((path, node))
        for key, value in node.items():
            found += _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _walk(value, f"{path}/{i}")
    return found


def test_committed_files_are_a_fresh_generation() -> None:
    assert stale() == [], (
        "the CRD files differ from a fresh generation; run `taas-controlplane crd`"
    )


def test_input_is_the_kubernetes_version_the_project_builds() -> None:
    source = json.loads(INPUT.read_text())
    assert source["kubernetesVersion"] == KUBERNETES_VERSION
    assert "io.k8s.api.core.v1.PodTemplateSpec" in source["schemas"]


def test_every_hand_written_rule_default_and_message_survives() -> None:
    base = yaml.safe_load(BASE.read_text())
    crd = _load(CRD_FILE.read_text())

    def rules(doc: Any) -> list[Any]:
        return [
            n["x-kubernetes-validations"] for _, n in _walk(doc) if "x-kubernetes-validations" in n
        ]

    def defaults(doc: Any) -> dict[str, Any]:
        spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        return {p: n["default"] for p, n in _walk(spec) if "default" in n and "/template/" not in p}

    assert rules(crd) == rules(base)
    assert defaults(crd) == defaults(base)
    assert (
        crd["spec"]["versions"][0]["additionalPrinterColumns"]
        == (base["spec"]["versions"][0]["additionalPrinterColumns"])
    )


def _crd_template() -> Any:
    crd = _load(rendered()[CRD_FILE])
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    worker = spec["properties"]["tfReplicaSpecs"]["additionalProperties"]
    return worker["properties"]["template"]


def test_pod_template_schema_is_controller_gens() -> None:
    template = _crd_template()
    meta = template["properties"]["metadata"]
    assert set(meta["properties"]) == {"annotations", "finalizers", "labels", "name", "namespace"}
    container = template["properties"]["spec"]["properties"]["containers"]["items"]
    env, ports = container["properties"]["env"], container["properties"]["ports"]
    assert env["type"] == "array" and env["x-kubernetes-list-map-keys"] == ["name"]
    assert ports["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    assert ports["items"]["properties"]["protocol"]["default"] == "TCP"
    cpu = container["properties"]["resources"]["properties"]["limits"]["additionalProperties"]
    assert cpu["x-kubernetes-int-or-string"] is True and cpu["pattern"].startswith("^(\\+|-)?")
    probe_port = container["properties"]["livenessProbe"]["properties"]["httpGet"]["properties"]
    assert probe_port["port"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    # what CRDs lack or controller-gen leaves out
    for path, node in _walk(template)[1:]:  # the template's own description is TaaS's
        assert not {"$ref", "allOf", "oneOf", "enum", "description"} & set(node), path
        assert not any(k.startswith("x-kubernetes-patch") for k in node), path
        assert node.get("default") != {}, path  # openapi-gen's zero values are not defaults


def test_the_schema_is_one_the_validator_implements_and_small_enough() -> None:
    check_schema(tfjob_schema())
    text = rendered()[CRD_FILE]
    compact = json.dumps(_load(text), separators=(",", ":"))
    assert len(compact) < ANNOTATION_LIMIT  # client-side `kubectl apply` still works


@pytest.mark.parametrize(
    "schemas",
    [
        {"T": {"type": "object", "not": {"type": "string"}}},
        {"T": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/T"}}}},
        {"T": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/Missing"}}}},
    ],
    ids=["unknown-keyword", "recursive", "missing"],
)
def test_generator_refuses_what_it_cannot_convert(schemas: dict[str, Any]) -> None:
    with pytest.raises(SchemaError):
        structural_schema(schemas, "T")


def test_validator_refuses_keywords_it_does_not_implement() -> None:
    with pytest.raises(ValueError, match="not implemented"):
        check_schema(
            {"type": "object", "properties": {"a": {"type": "string", "format": "x", "oneOf": []}}}
        )


def test_validate_checks_the_pod_enums_the_crd_leaves_out() -> None:
    """`taas validate`'s copy keeps kube-openapi's enums as pod validation's lists, so an
    imagePullPolicy pod validation refuses is refused offline; the CRD has none."""
    offline = template_schema()["properties"]["spec"]["properties"]["containers"]["items"]
    pull = offline["properties"]["imagePullPolicy"]
    assert pull["x-taas-pod-enum"] == ["Always", "IfNotPresent", "Never"]
    crd_containers = _crd_template()["properties"]["spec"]["properties"]["containers"]
    assert "x-taas-pod-enum" not in crd_containers["items"]["properties"]["imagePullPolicy"]
