"""The peering decision TaaS reads from kopf's peering object (pure: events fed by hand): the
same rule as kopf's -- active while its own entry is there and no other live peer has a
priority at or above its own, in every watched namespace -- decided again when a blocking
peer's lifetime runs out. The end-to-end case (two replicas, one acts) is in test_resilience."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from taas_operator.apiserver.transport import Endpoint
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller.watch.peering import PeeringGate, own_identity

pytestmark = pytest.mark.fast

ME = "me@host"


def _peer(priority: int, seen_ago_s: float = 0.0, lifetime: int = 60) -> dict[str, Any]:
    seen = datetime.now(UTC) - timedelta(seconds=seen_ago_s)
    return {"priority": priority, "lifetime": lifetime, "lastseen": seen.isoformat()}


def _peering(status: dict[str, Any], namespace: str = "") -> dict[str, Any]:
    meta = {"name": "taas", **({"namespace": namespace} if namespace else {})}
    return {"metadata": meta, "status": status}


def _gate(namespaces: list[str], flips: list[bool]) -> PeeringGate:
    kube = KubeClient(Endpoint("http://localhost"))
    return PeeringGate(kube, "taas", ME, 100, namespaces, flips.append)


def test_the_highest_live_priority_acts_ties_and_strangers_do_not() -> None:
    async def scenario() -> list[bool]:
        flips: list[bool] = []
        gate = _gate([], flips)
        gate._seen(None, _peering({"other": _peer(50)}))  # we are not announced yet
        gate._seen("MODIFIED", _peering({ME: _peer(100), "other": _peer(50)}))
        gate._seen("MODIFIED", _peering({ME: _peer(100), "other": _peer(100)}))  # a tie: pause
        gate._seen("MODIFIED", _peering({ME: _peer(100), "other": _peer(200, 120)}))  # dead
        gate._seen("MODIFIED", {**_peering({}), "metadata": {"name": "another-peering"}})
        gate._seen("DELETED", _peering({}))  # our peering object gone: pause
        return flips

    assert asyncio.run(scenario()) == [True, False, True, False]


def test_a_blocking_peer_that_stops_renewing_releases_us_when_its_lifetime_ends() -> None:
    async def scenario() -> tuple[bool, bool]:
        flips: list[bool] = []
        gate = _gate([], flips)
        gate._seen(None, _peering({ME: _peer(100), "boss": _peer(200, seen_ago_s=0, lifetime=1)}))
        before = gate.active
        await asyncio.sleep(2.0)  # its lastseen + lifetime has passed: decided again
        return before, gate.active

    assert asyncio.run(scenario()) == (False, True)


def test_every_watched_namespace_must_agree() -> None:
    async def scenario() -> list[bool]:
        flips: list[bool] = []
        gate = _gate(["a", "b"], flips)
        gate._seen(None, _peering({ME: _peer(100)}, "a"))
        assert not gate.active  # b's object not seen yet
        gate._seen(None, _peering({ME: _peer(100)}, "b"))
        gate._seen("MODIFIED", _peering({ME: _peer(100), "x": _peer(300)}, "b"))
        return flips

    assert asyncio.run(scenario()) == [True, False]


def test_identity_is_the_pod_name_in_a_cluster(monkeypatch: Any) -> None:
    monkeypatch.setenv("POD_ID", "taas-7d9f-abcde")
    assert own_identity() == "taas-7d9f-abcde"
    monkeypatch.delenv("POD_ID")
    user_host, stamp, suffix = own_identity().split("/")  # out of a cluster: kopf's form
    assert "@" in user_host and len(stamp) == 14 and len(suffix) == 3
