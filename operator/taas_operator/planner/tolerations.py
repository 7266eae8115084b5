"""How long a replica pod stays bound to a lost node: the operator's default tolerations.

    node_lost_tolerations(tolerations, seconds) -> list[dict]

Kubernetes' DefaultTolerationSeconds admission gives every pod 300 s on the
`node.kubernetes.io/not-ready` and `unreachable` NoExecute taints; a synchronous gang with one
member on a lost node trains no more during those 300 s. The operator gives each replica pod
`seconds` instead (`--node-lost-toleration-seconds`), for each taint the template has no
toleration of (the same test as that admission plugin's: a toleration whose key is the taint's
or empty, with effect NoExecute or none), so a template's own toleration stands as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taas_operator.api.constants import NODE_LOST_TAINTS

_NO_EXECUTE = "NoExecute"


def _covers(toleration: dict[str, Any], key: str) -> bool:
    """Whether the template already speaks for the NoExecute taint `key`: DefaultTolerationSeconds'
    own test (the toleration's key is `key` or empty, its effect NoExecute or empty)."""
    return toleration.get("key") in (None, "", key) and toleration.get("effect") in (
        None,
        "",
        _NO_EXECUTE,
    )


def node_lost_tolerations(
    tolerations: Sequence[dict[str, Any]], seconds: int
) -> list[dict[str, Any]]:
    """`tolerations`, then a `seconds` NoExecute toleration of each lost-node taint none of
    them tolerates; `seconds` 0 adds none (Kubernetes' default applies)."""
    result = list(tolerations)
    if seconds <= 0:
        return result
    for key in NODE_LOST_TAINTS:
        if not any(_covers(t, key) for t in tolerations):
            result.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": _NO_EXECUTE,
                    "tolerationSeconds": seconds,
                }
            )
    return result
