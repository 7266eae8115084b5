"""The offline validator's pieces on their own (no apiserver; tests/api/test_agreement.py checks
the whole against a real one): what is pruned and reported, how numbers and values are read and
printed the way kubectl and the apiserver do."""

from __future__ import annotations

from typing import Any

import pytest

from taas_operator.api.gofmt import show
from taas_operator.api.listtypes import list_type_errors
from taas_operator.api.pruning import prepare
from taas_operator.api.schema import template_schema, tfjob_schema
from taas_operator.api.structural import schema_errors

OBJ: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}


def test_preserved_fields_are_kept_and_not_reported() -> None:
    status = {"replicaStatuses": {"Worker": {"labelSelector": {"matchLabels": {}, "x": 1}}}}
    prepared = prepare({"status": status}, tfjob_schema())
    assert prepared.unknown == []
    assert prepared.pruned["status"] == status


def test_unknown_fields_nulls_and_defaults() -> None:
    template = {"spec": {"containers": [{"name": "t", "ports": [{"containerPort": 1}],
                                         "foo": 1, "bar": None, "env": None}]}}  # fmt: skip
    prepared = prepare(template, template_schema(), resource_root=False)
    assert [u.path for u in prepared.unknown] == ["spec.containers[0].foo"]
    (container,) = prepared.pruned["spec"]["containers"]
    assert container == {"name": "t", "ports": [{"containerPort": 1}]}
    assert prepared.defaulted["spec"]["containers"][0]["ports"][0]["protocol"] == "TCP"


def test_a_map_where_a_list_belongs_is_named_with_its_parent_type() -> None:
    prepared = prepare({"spec": {"containers": [{"name": "t", "env": {"A": "1"}}]}},
                       template_schema(), resource_root=False)  # fmt: skip
    (unknown,) = prepared.unknown
    assert unknown.path == "spec.containers[0].env.A" and unknown.parent_type == "array"


@pytest.mark.parametrize(
    ("value", "read_as"),
    [(2.0, 2), (4.489205903471411e16, 44892059034714110), (1.5, 1.5), (1e21, 1e21)],
)
def test_numbers_are_read_as_kubectl_sends_them(value: float, read_as: Any) -> None:
    """kubectl writes a whole float with Go's shortest digits; the apiserver reads an int64."""
    got = prepare({"a": value}, {"type": "object", "additionalProperties": {}}, False).pruned
    assert got["a"] == read_as and type(got["a"]) is type(read_as)


def test_escaped_astral_characters_are_joined() -> None:
    got = prepare({"a": "\ud83d\ude00"}, OBJ, resource_root=False).pruned
    assert got == {"a": "\U0001f600"}


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        ("A=1", '"A=1"'),
        ("a\x06b", '"a\\x06b"'),
        (5, "5"),
        (True, "true"),
        ({"b": 1, "a": "<x>"}, '{"a":"\\u003cx\\u003e","b":1}'),
        ([0, -1.5983431208189034e19], "[0,-15983431208189034000]"),
    ],
)
def test_values_are_printed_as_the_apiserver_prints_them(value: Any, printed: str) -> None:
    assert show(value) == printed


def test_type_errors_name_the_field_and_the_fix() -> None:
    (error,) = schema_errors({"a": 5}, OBJ)
    assert error.blocking
    assert str(error) == (
        'a: Invalid value: "integer": a in body must be of type string: "integer"; '
        "fix: make a a string (quote it)"
    )


def test_only_a_repeated_items_second_appearance_is_named() -> None:
    schema = {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
    errors = list_type_errors(["a", "a", "a", "b", "b"], schema, (("field", "s"),))
    assert [str(e) for e in errors] == ['s[1]: Duplicate value: "a"', 's[4]: Duplicate value: "b"']
