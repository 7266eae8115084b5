"""Names as names: the checks every outside value passes and the escaping every apiserver path
takes (api.names, api.resources), with the traversals issue 20 found and their encodings."""

from __future__ import annotations

from urllib.parse import unquote

import pytest

from taas_operator.api.names import InvalidName, check_name, check_namespace, segment
from taas_operator.api.resources import POD, TFJOB

ATTACKS = [
    "..",
    ".",
    "../../../../api/v1/namespaces/kube-system/secrets?x=",
    "a/b",
    "%2E%2E",
    "..%2F..",
    "x?watch=1",
    "x#frag",
    "",
    "UPPER",
    "a" * 254,
    "\x00",
    "-lead",
    "mnist\n",  # Python's `$` matches before a final newline: the checks end at `\Z`
]


@pytest.mark.parametrize("value", ATTACKS)
def test_outside_values_that_are_not_names_are_refused(value: str) -> None:
    with pytest.raises(InvalidName) as caught:
        check_name(value, "metadata.name")
    assert "metadata.name" in str(caught.value)
    with pytest.raises(InvalidName):
        check_namespace(value)


@pytest.mark.parametrize("value", ["mnist", "a-b", "x" * 63])
def test_names_pass(value: str) -> None:
    assert check_name(value) == value
    assert check_namespace(value) == value
    assert check_name(value + ".v2") == value + ".v2"  # a name may have dots


def test_namespace_is_a_label_not_a_subdomain() -> None:
    with pytest.raises(InvalidName, match="DNS-1123 label"):
        check_namespace("team.a")
    with pytest.raises(InvalidName, match="1 to 63"):
        check_namespace("x" * 64)


@pytest.mark.parametrize("value", ATTACKS)
def test_a_segment_stays_one_segment(value: str) -> None:
    escaped = segment(value)
    assert "/" not in escaped and "?" not in escaped and "#" not in escaped
    assert escaped not in (".", "..")
    assert unquote(escaped) == value


def test_every_path_escapes_namespace_and_name() -> None:
    path = TFJOB.path("..", "../../secrets")
    assert path == "/apis/kubeflow.org/v1/namespaces/%2E%2E/tfjobs/..%2F..%2Fsecrets"
    assert POD.path("team", "p-0", "log") == "/api/v1/namespaces/team/pods/p-0/log"
    assert TFJOB.path() == "/apis/kubeflow.org/v1/tfjobs"
