"""What the dashboard's identity may do, and doing it.

    await allowed(api, verb, namespace) -> Permission     # a SelfSubjectAccessReview
    await act(call) -> result                             # a TFJob client call, errors as HTTP

Permissions are asked of the apiserver as the identity the page acts with (the kubeconfig's
user, or with `--auth kubernetes` the viewer's own token), so the buttons a viewer sees are
the viewer's own rights. Actions are the TFJob client's calls (`taas_operator.client`), made in
a thread (they block), a refusal returned with its message, which carries the apiserver's words.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from taas_operator.api.constants import GROUP, PLURAL
from taas_operator.apiserver import errors
from taas_operator.apiserver.errors import Unreachable
from taas_operator.apiserver.kubeapi import KubeApi
from taas_operator.dashboard.source import ActionError, Permission

REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
_STATUSES: list[tuple[type[Exception], int]] = [
    (errors.Forbidden, 403),
    (errors.JobNotFound, 404),
    (errors.AlreadyExists, 409),
    (errors.Invalid, 422),
    (errors.Unreachable, 503),
    (errors.ApiError, 500),
]


async def allowed(api: KubeApi, verb: str, namespace: str) -> Permission:
    """May the identity `verb` tfjobs in `namespace`? (never raises; says why not)"""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "namespace": namespace,
                "verb": verb,
                "group": GROUP,
                "resource": PLURAL,
            }
        },
    }
    try:
        status, data = await api.request("POST", REVIEWS, body=review)
    except Unreachable as exc:
        return Permission(allowed=False, reason=f"the apiserver is not answering ({exc})")
    if status != 201 or not isinstance(data, dict):
        return Permission(allowed=False, reason=f"the apiserver could not say (HTTP {status})")
    if (data.get("status") or {}).get("allowed"):
        return Permission(allowed=True)
    who = api.user or "you"
    return Permission(
        allowed=False,
        reason=f"{who} may not {verb} tfjobs.{GROUP} in namespace {namespace} (RBAC)",
    )


async def act(call: Callable[[], Any]) -> Any:
    """`call()` in a thread; a client error as ActionError(HTTP status, the client's message)."""
    try:
        return await asyncio.to_thread(call)
    except errors.ApiError as exc:
        status = next(code for kind, code in _STATUSES if isinstance(exc, kind))
        raise ActionError(status, str(exc)) from None
