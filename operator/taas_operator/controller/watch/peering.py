"""Whether this replica may act, when replicas share the work through kopf's peering.

    gate = PeeringGate(kube, name, identity, priority, namespaces, on_change)
    await gate.run()          # a task: watches the peering object(s)
    gate.active -> bool       # on_change(active) is called whenever it flips
    own_identity() -> str     # what kopf must be given as this replica's identity

kopf keeps the peering object ((Cluster)KopfPeering `name`): every replica's keepalive writes
its identity, priority, lifetime and lastseen into the object's status, and kopf pauses its own
watches while another live peer (lastseen + lifetime still ahead) has a higher priority, or the
same one. TaaS's watches are its own (`informer`), so it makes that same decision from the same
object: active while its own entry is there (kopf has announced it to the others) and no other
live peer has a priority at or above its own, in the cluster-wide object or in every watched
namespace's one; decided again on every change of an object and when the next such peer's
lifetime runs out. Until then it is paused (as kopf starts every replica paused). While paused
the watches go on filling the caches, and passes wait (`WorkQueue.close`), timers' included.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import os
import random
import socket
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from taas_operator.api.resources import Kind
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller.watch.informer import Informer

logger = logging.getLogger("taas_operator.controller")

CLUSTER_PEERINGS = Kind("kopf.dev", "v1", "clusterkopfpeerings")
PEERINGS = Kind("kopf.dev", "v1", "kopfpeerings")
_SLACK_S = 0.5


def own_identity() -> str:
    """This replica's peering identity, as kopf would make it (the pod's name in a cluster)."""
    pod = os.environ.get("POD_ID")
    if pod:
        return pod
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    suffix = "".join(random.choices("abcdefhijklmnopqrstuvwxyz0123456789", k=3))
    return f"{getpass.getuser()}@{socket.gethostname()}/{stamp}/{suffix}"


def _deadline(info: Mapping[str, Any], now: datetime) -> datetime:
    try:
        seen = datetime.fromisoformat(str(info["lastseen"]))
    except (KeyError, ValueError):
        seen = now  # kopf counts a peer without lastseen as just seen
    if seen.tzinfo is None:
        seen = seen.replace(tzinfo=UTC)
    return seen + timedelta(seconds=int(info.get("lifetime", 60)))


class PeeringGate:
    """kopf's peering decision for this replica, from the peering object(s)."""

    def __init__(
        self,
        kube: KubeClient,
        name: str,
        identity: str,
        priority: int,
        namespaces: Sequence[str],
        on_change: Callable[[bool], None],
    ) -> None:
        self.name, self.identity, self.priority = name, identity, priority
        self.on_change = on_change
        self.active = False
        kind = PEERINGS if namespaces else CLUSTER_PEERINGS
        self._places = list(namespaces) or [""]
        self._status: dict[str, dict[str, Any]] = {}  # namespace ("" cluster-wide) -> status
        self._informers = [Informer(kube, kind, ns, "", self._seen) for ns in self._places]
        self._timer: asyncio.TimerHandle | None = None

    async def run(self) -> None:
        await asyncio.gather(*(informer.run() for informer in self._informers))

    def _seen(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        meta = body.get("metadata") or {}
        if meta.get("name") != self.name:
            return
        place = str(meta.get("namespace") or "") if self._places != [""] else ""
        if event_type == "DELETED":
            self._status.pop(place, None)
        else:
            self._status[place] = dict(body.get("status") or {})
        self.decide()

    def decide(self) -> None:
        """Active unless a live peer outranks or ties us somewhere (or we are not listed)."""
        now = datetime.now(UTC)
        active, expiry = True, None
        for place in self._places:
            peers = self._status.get(place)
            if peers is None or self.identity not in peers:
                active = False
                continue
            for identity, info in peers.items():
                deadline = _deadline(info or {}, now)
                if identity == self.identity or deadline <= now:
                    continue
                if int((info or {}).get("priority", 0)) >= self.priority:
                    active = False
                    expiry = deadline if expiry is None else min(expiry, deadline)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if expiry is not None:  # decide again when that peer may be gone
            delay = (expiry - now).total_seconds() + _SLACK_S
            self._timer = asyncio.get_running_loop().call_later(delay, self.decide)
        if active != self.active:
            self.active = active
            state = "active" if active else "paused"
            logger.info("peering %r: this replica is %s", self.name, state)
            self.on_change(active)
