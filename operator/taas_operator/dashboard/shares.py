"""Shares of the dashboard's bounded slots that identities cannot multiply.

    group_of(user) -> str                          # whose share an identity draws on
    refusal_reason(held, taken, per_group, total) -> "full" | "group" | "busy" | None

A tenant who may create ServiceAccounts in a namespace can mint as many identities as they
like, so every ServiceAccount of one namespace counts as one group, named as Kubernetes names
their group: `system:serviceaccounts:<namespace>`. Any other user (a person from the
cluster's identity provider, whom a tenant cannot mint) is a group of their own.

A group holds at most `per_group` of a bounded resource (viewer slots, live views), and once
half of the `total` is taken, at most half that: the second half of the slots goes to groups
that hold little. Filling the dashboard therefore takes `total / per_group` groups for its
first half and twice as many for its second; docs/dashboard-access.md gives the numbers.
"""

from __future__ import annotations

from typing import Literal

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"

Reason = Literal["full", "group", "busy"]


def group_of(user: str) -> str:
    """`system:serviceaccounts:NS` for a ServiceAccount of NS; the user itself otherwise."""
    if user.startswith(SERVICE_ACCOUNT_PREFIX):
        namespace = user[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")[0]
        return f"system:serviceaccounts:{namespace}"
    return user


def refusal_reason(held: int, taken: int, per_group: int, total: int) -> Reason | None:
    """Why a group holding `held` of the `taken` slots may not take one more (None: it may)."""
    if taken >= total:
        return "full"
    if held >= per_group:
        return "group"
    if taken >= total // 2 and held >= max(per_group // 2, 1):
        return "busy"
    return None
