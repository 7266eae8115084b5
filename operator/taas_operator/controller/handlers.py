"""The kopf wiring: thin watch handlers that only tell the Controller what changed.

    build_registry(controller) -> kopf.OperatorRegistry
    kopf_settings(settings: OperatorSettings) -> kopf.OperatorSettings
    on_tfjob_event(controller, event)      # plain functions, callable from tests
    on_child_event(controller, event, plural)

Only `@kopf.on.event` handlers are used: they see every watch event (initial listing, ADDED,
MODIFIED, DELETED) and make kopf store nothing on the objects -- no finalizer (deleting a TFJob
never waits for the operator), no progress or last-handled annotations, no status fields of its
own. The pod, service and NetworkPolicy watches carry a server-side label selector
(`settings.watching.label_selectors`), so only the jobs' children are streamed to the operator.
The TFJob's status subresource belongs to TaaS alone. There are no change handlers and no daemons
(a test checks), so kopf's diff base is off (`NoDiffBase`): only they would need it.
Kopf's event posting is off: the Controller records its own events. With `peering` set, kopf's
peering keeps one replica active (random priority per process; the others pause).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from typing import Any

import kopf

from taas_operator.api import constants as c
from taas_operator.controller.children import CHILD_SELECTOR
from taas_operator.controller.triggers import Controller
from taas_operator.settings import OperatorSettings

logger = logging.getLogger("taas_operator.controller")

_CHILD_LABELS: Mapping[str, Any] = {
    c.LABEL_OPERATOR_NAME: c.CONTROLLER_NAME,
    c.LABEL_JOB_NAME: kopf.PRESENT,
}
_CHILDREN = (("", "v1", "pods"), ("", "v1", "services"))
_POLICIES = ("networking.k8s.io", "v1", "networkpolicies")
# CHILD_SELECTOR: the same filter as `_CHILD_LABELS`, applied by the apiserver to kopf's child
# watches (a handler's `labels=` alone filters client-side: every pod in the cluster would be
# streamed).


def on_tfjob_event(controller: Controller, event: Mapping[str, Any]) -> None:
    """A TFJob watch event: DELETED forgets the job, anything else requests a pass over it."""
    body = event.get("object") or {}
    meta = body.get("metadata") or {}
    if event.get("type") == "DELETED":
        controller.job_gone(meta.get("namespace", ""), meta.get("name", ""))
    else:
        controller.job_seen(body, event.get("type"))


def on_child_event(controller: Controller, event: Mapping[str, Any], plural: str = "") -> None:
    """A pod/service/NetworkPolicy (`plural`) of a job changed or was deleted: a pass over its job
    (unless the event only echoes the operator's own creation of it)."""
    controller.child_seen(plural, event.get("type"), event.get("object") or {})


def build_registry(controller: Controller) -> kopf.OperatorRegistry:
    """A kopf registry whose handlers feed `controller`."""
    registry = kopf.OperatorRegistry()

    @kopf.on.login(id="taas-login", registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return controller.kube.connection_info()

    @kopf.on.event(c.GROUP, c.VERSION, c.PLURAL, id="tfjobs-event", registry=registry)
    async def tfjob_event(event: kopf.RawEvent, **_: Any) -> None:
        on_tfjob_event(controller, event)

    children = [*_CHILDREN, _POLICIES] if controller.settings.network_policy else _CHILDREN
    for group, version, plural in children:

        @kopf.on.event(
            group, version, plural, id=f"{plural}-event", labels=_CHILD_LABELS, registry=registry
        )
        async def child_event(event: kopf.RawEvent, resource: kopf.Resource, **_: Any) -> None:
            on_child_event(controller, event, resource.plural)

    @kopf.on.startup(id="taas-children", registry=registry)
    async def startup(**_: Any) -> None:
        await controller.start()  # before kopf starts any watch: the child cache (`children`)

    @kopf.on.probe(id="jobs", registry=registry)
    def cached_jobs(**_: Any) -> int:
        return len(controller.jobs)

    @kopf.on.cleanup(id="taas-cleanup", registry=registry)
    async def cleanup(**_: Any) -> None:
        await controller.close()

    return registry


class NoDiffBase(kopf.DiffBaseStorage):
    """kopf's diff base switched off: none kept, none read.

    For every watch event kopf deep-copies the object into an "essence" and parses the stored
    one, only to compute the diff its change handlers (`on.create/update/resume/delete/field`)
    and daemons receive. TaaS registers neither (a test checks), so the diff is
    never used: in the operator benchmark's profile that copy was half of kopf's time per event.
    Safe with peering, restarts and missed events: the diff base only decides which change
    handlers to call, and watch-event handlers (TaaS's only kind) are called for every event
    whatever it says; TaaS's own passes are level-triggered and read no diff.
    """

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        return None


def kopf_settings(settings: OperatorSettings) -> kopf.OperatorSettings:
    """kopf's settings for TaaS: no events from kopf, no diff base (`NoDiffBase`), any other
    bookkeeping in annotations, child watches filtered by the apiserver."""
    ks = kopf.OperatorSettings()
    ks.posting.enabled = False
    ks.persistence.finalizer = "taas.dev/finalizer"
    ks.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="taas.dev")
    ks.persistence.diffbase_storage = NoDiffBase()
    for child in (*_CHILDREN, _POLICIES):
        ks.watching.label_selectors[child] = CHILD_SELECTOR
    ks.peering.standalone = not settings.peering
    if settings.peering:
        ks.peering.name = settings.peering
        ks.peering.mandatory = True  # a missing peering object is an error, not "standalone"
        # kopf pauses EVERY replica when peers share a priority: a random one per process lets
        # the highest run and the others wait (taking over within `lifetime` when it dies).
        ks.peering.priority = random.SystemRandom().randint(1, 2**30)
    return ks
