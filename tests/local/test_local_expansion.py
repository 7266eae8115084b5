"""Kubernetes $(VAR) expansion: the kubelet's cases (k8s expansion_test.go), table-driven."""

from __future__ import annotations

import pytest

from taas_operator.local.expansion import expand

ENV = {"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("$(VAR_A)", "A"),
        ("___$(VAR_B)___", "___B___"),
        ("$(VAR_A)-$(VAR_B)-$(VAR_C)", "A-B-C"),
        ("$(VAR_EMPTY)", ""),
        ("$(VAR_REF)", "$(VAR_A)"),  # one pass only
        ("$(UNKNOWN)", "$(UNKNOWN)"),  # unknown: kept as written
        ("$$(VAR_A)", "$(VAR_A)"),  # escaped
        ("$$$(VAR_A)", "$A"),
        ("$$$$(VAR_A)", "$$(VAR_A)"),
        ("$$", "$"),
        ("$", "$"),
        ("foo$", "foo$"),
        ("$(VAR_A", "$(VAR_A"),  # unclosed
        ("$()", "$()"),
        ("$VAR_A", "$VAR_A"),  # shell syntax is plain text
        ("${VAR_A}", "${VAR_A}"),
        ("$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"),
        ("--ps_hosts=$(VAR_A),--x=$(VAR_B)", "--ps_hosts=A,--x=B"),
        ("", ""),
        ("no refs", "no refs"),
    ],
)
def test_expand(text: str, want: str) -> None:
    assert expand(text, ENV) == want
