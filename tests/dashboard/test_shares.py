"""Dashboard limits that identities cannot multiply (issue 39), without a server or apiserver:
the gate is given a stand-in for the apiserver's SelfSubjectReview.

- a tenant who may create ServiceAccounts mints identities: the ServiceAccounts of one
  namespace share one group's viewer slots and live views (61 of them filled all 64 slots);
- the second half of the slots goes to groups that hold little (four identities filled the 64
  live views);
- bad tokens are throttled per credential fingerprint and by a ceiling over all clients, never
  per client address (10 bad tokens locked every sign-in from one address, which behind an
  Ingress is everyone).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request

from taas_operator.dashboard import access
from taas_operator.dashboard.access import MAX_VIEWERS, Refusal, Viewer, ViewerGate
from taas_operator.dashboard.local_source import LocalSource
from taas_operator.dashboard.server import STREAMS_PER_GROUP, STREAMS_PER_VIEWER, STREAMS_TOTAL
from taas_operator.dashboard.shares import group_of
from taas_operator.dashboard.source import Source
from taas_operator.dashboard.streams import StreamSlots

pytestmark = pytest.mark.fast


def _reviewer(asked: list[str]) -> Callable[[str], Any]:
    """Tokens `sa:NS:NAME` are that ServiceAccount, `user:NAME` a person, anything else is
    refused (401), as the apiserver would answer."""

    async def make_source(token: str) -> tuple[int, str, str, Source | None]:
        asked.append(token)
        kind, _, rest = token.partition(":")
        if kind == "sa":
            return 201, f"system:serviceaccount:{rest}", f"uid-{rest}", LocalSource()
        if kind == "user":
            return 201, rest, f"uid-{rest}", LocalSource()
        return 401, "", "", None

    return make_source


def _admit(gate: ViewerGate, token: str) -> int:
    """Status of one request bearing `token`, from one client address (as behind an Ingress)."""
    request = make_mocked_request("GET", "/api/info", headers={"Authorization": f"Bearer {token}"})

    async def ask() -> int:
        try:
            await gate.admit(request)
        except Refusal as refusal:
            return refusal.status
        return 200

    return asyncio.get_event_loop().run_until_complete(ask())


@pytest.fixture
def loop() -> Any:
    made = asyncio.new_event_loop()
    asyncio.set_event_loop(made)
    yield made
    made.close()
    asyncio.set_event_loop(None)


def test_service_accounts_of_one_namespace_share_their_group_slots(loop: Any) -> None:
    gate = ViewerGate(_reviewer([]))
    minted = [_admit(gate, f"sa:tenant:robot-{i}") for i in range(61)]
    share = access.VIEWERS_PER_GROUP
    assert minted == [200] * share + [429] * (61 - share)
    with pytest.raises(Refusal, match="system:serviceaccounts:tenant"):
        loop.run_until_complete(gate.sign_in("sa:tenant:robot-99"))
    # the next person, and another namespace's ServiceAccounts, still get in
    assert _admit(gate, "user:alice@example.com") == 200
    assert _admit(gate, "sa:other:robot") == 200
    assert group_of("system:serviceaccount:tenant:robot-1") == "system:serviceaccounts:tenant"
    assert group_of("alice@example.com") == "alice@example.com"


def test_filling_the_viewer_slots_takes_many_groups(loop: Any) -> None:
    """Each group signs in identities until refused: the first half of the slots goes 8 a
    group, the second half 4 a group; then the dashboard is full."""
    gate = ViewerGate(_reviewer([]))
    per_group: list[int] = []
    for group in range(40):
        admitted = 0
        while _admit(gate, f"sa:ns-{group}:robot-{admitted}") == 200:
            admitted += 1
        per_group.append(admitted)
        if len(gate.viewers) == MAX_VIEWERS:
            break
    share = access.VIEWERS_PER_GROUP
    half = MAX_VIEWERS // 2
    assert per_group == [share] * (half // share) + [share // 2] * (half // (share // 2))
    assert len(per_group) == 12


def test_live_views_are_shared_per_group_and_four_identities_cannot_fill_them() -> None:
    slots = StreamSlots(STREAMS_PER_VIEWER, STREAMS_TOTAL, STREAMS_PER_GROUP)
    robots = [
        Viewer(key=f"robot-{i}", source=LocalSource(), group="system:serviceaccounts:t")
        for i in range(4)
    ]
    kept: list[Any] = []  # the open streams' context managers (dropped, they would end)

    def take(viewer: Viewer) -> None:
        stream = slots.take(viewer)
        stream.__enter__()
        kept.append(stream)

    held, refused = 0, []
    for robot in robots:  # four ServiceAccounts of one namespace: one group's share
        while True:
            try:
                take(robot)
            except Refusal as refusal:
                refused.append(refusal.message)
                break
            held += 1
    assert held == STREAMS_PER_GROUP
    assert all("system:serviceaccounts:t has 16 live views open" in m for m in refused[1:])
    people = [Viewer(key=f"person-{i}", source=LocalSource()) for i in range(3)]
    taken = []
    for person in people:
        count = 0
        while True:
            try:
                take(person)
            except Refusal:
                break
            count += 1
        taken.append(count)
    # the first person fills the first half with the robots; later ones get half a share
    assert taken == [STREAMS_PER_GROUP, STREAMS_PER_GROUP // 2, STREAMS_PER_GROUP // 2]
    assert slots.open < STREAMS_TOTAL  # four groups, the robots' included, have not filled it


def test_bad_tokens_do_not_lock_out_others_at_the_same_address(
    loop: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    monkeypatch.setattr(access, "FAILED_SIGN_INS", 12)
    gate = ViewerGate(_reviewer(asked))
    signed_in = "user:bob"
    assert _admit(gate, signed_in) == 200
    assert [_admit(gate, f"guess-{i}") for i in range(10)] == [401] * 10
    assert _admit(gate, "user:alice") == 200  # same address, her own token: in
    # one refused token again and again: answered from its fingerprint, asked once
    assert [_admit(gate, "guess-0") for _ in range(20)] == [401] * 20
    assert asked.count("guess-0") == 1
    # past the ceiling over all clients: new tokens wait, those signed in go on
    assert [_admit(gate, f"more-{i}") for i in range(2)] == [401, 401]
    assert _admit(gate, "user:carol") == 429
    assert "carol" not in " ".join(asked)
    assert _admit(gate, signed_in) == 200 and _admit(gate, "user:alice") == 200
