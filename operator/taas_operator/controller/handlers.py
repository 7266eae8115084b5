"""The kopf wiring: what kopf still does for TaaS, and its settings.

    build_registry(controller) -> kopf.OperatorRegistry
    kopf_settings(settings: OperatorSettings) -> kopf.OperatorSettings

kopf runs the operator's lifecycle (signals, start-up and clean-up), logs in with the same
credentials as the Controller, serves `/healthz` (its probe reports the jobs cached) and, with
`peering` set, keeps this replica's entry in the peering object up to date (its keepalive; a
random priority per process, so that the highest runs and the others wait). kopf watches
nothing else: the Controller's own watches (`informer`) replaced kopf's resource handlers,
which cost more CPU per watch event than all the rest (docs/benchmarks.md, "kopf's watches"), and
the Controller reads the peering decision from the same object kopf keeps (`peering`).
Why that is safe:
- peering: the same rule as kopf's on the same data; while paused no pass starts (the work
  queue waits, timers included), the caches stay current, so taking over needs no re-list;
- restarts: a new process LISTs everything before any pass runs, then re-checks every job
  (in the background lane: a new job first);
- missed events: a watch that loses its place LISTs again and reports what vanished as deleted;
  passes are level-triggered and read caches that a re-list has made whole.
So kopf stores nothing on any object: no finalizer (deleting a TFJob never waits for the
operator), no annotations, no status fields; its event posting is off (the Controller records
its own events).
"""

from __future__ import annotations

import logging
import random
from typing import Any

import kopf

from taas_operator.apiserver.transport import Endpoint
from taas_operator.controller.controller import Controller
from taas_operator.settings import OperatorSettings

logger = logging.getLogger("taas_operator.controller")


def build_registry(controller: Controller) -> kopf.OperatorRegistry:
    """A kopf registry: login, start-up (the Controller's watches), probe, clean-up."""
    registry = kopf.OperatorRegistry()

    @kopf.on.login(id="taas-login", registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection_info(controller.kube.endpoint)

    @kopf.on.startup(id="taas-watches", registry=registry)
    async def startup(**_: Any) -> None:
        await controller.start()

    @kopf.on.probe(id="jobs", registry=registry)
    def cached_jobs(**_: Any) -> int:
        return len(controller.jobs)

    @kopf.on.cleanup(id="taas-cleanup", registry=registry)
    async def cleanup(**_: Any) -> None:
        await controller.close()

    return registry


def connection_info(endpoint: Endpoint) -> kopf.ConnectionInfo:
    """The operator's own server and identity (`apiserver.credentials`), for kopf's watches."""
    header = endpoint.authorization()
    scheme, _, token = header.partition(" ") if header else ("", "", "")
    return kopf.ConnectionInfo(
        server=endpoint.host,
        ca_path=endpoint.ca_file,
        insecure=not endpoint.verify,
        scheme=scheme or None,
        token=token or None,
        certificate_path=endpoint.cert_file,
        private_key_path=endpoint.key_file,
    )


def kopf_settings(settings: OperatorSettings) -> kopf.OperatorSettings:
    """kopf's settings for TaaS: no events from kopf; peering as `settings.peering` says."""
    ks = kopf.OperatorSettings()
    ks.posting.enabled = False
    ks.peering.standalone = not settings.peering
    if settings.peering:
        ks.peering.name = settings.peering
        ks.peering.mandatory = True  # a missing peering object is an error, not "standalone"
        # kopf pauses EVERY replica when peers share a priority: a random one per process lets
        # the highest run and the others wait (taking over within `lifetime` when it dies).
        ks.peering.priority = random.SystemRandom().randint(1, 2**30)
    return ks
