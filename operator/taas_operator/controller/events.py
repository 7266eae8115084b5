"""The events the operator records on a TFJob, and how API errors are logged.

    Done(verb, kind, name)                  # one object created, deleted or updated
    grouped(outcomes: Sequence[Done | Event]) -> list[Event]
    failed(verb, kind, name, err) -> Event  # Warning Failed<Verb><Kind>
    recorder = EventRecorder(kube)
    await recorder.post(key, job_body, events)
    recorder.clear(key)                     # a pass ended without errors; also: the job is gone
    log_api_error(err)

A pass's creations and deletions of one kind become one Normal event naming the objects
("Created 60 pods: a, b, ... (and N more)", reason `SuccessfulCreatePod`), as Kubeflow names
them; the lifecycle engine's own events (`engine.Event`) pass through as they are. A Warning
about a failed API call (`Failed...`) is posted once per distinct message until the job's next
pass without errors, so a retried failure does not post the same event every backoff.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from taas_operator.controller.jobcache import JobKey
from taas_operator.controller.kube import (
    POD,
    POLICY,
    SERVICE,
    ApiError,
    Forbidden,
    Kind,
    KubeClient,
)
from taas_operator.engine import Event

logger = logging.getLogger("taas_operator.controller")

#: An Event's message is capped at 1024 characters (kube._MAX_EVENT_MESSAGE); stay under it.
_MAX_GROUPED_MESSAGE = 1000


@dataclass(frozen=True)
class Verb:
    """How one verb is written in reasons and messages."""

    title: str  # in reasons: SuccessfulCreatePod, FailedCreatePod
    past: str  # "Created 3 pods: ..."
    doing: str  # "Error creating pod ..."


CREATE = Verb("Create", "Created", "creating")
DELETE = Verb("Delete", "Deleted", "deleting")
UPDATE = Verb("Update", "Updated", "updating")


@dataclass(frozen=True)
class _Noun:
    title: str  # in reasons
    one: str
    many: str


_NOUNS = {
    POD: _Noun("Pod", "pod", "pods"),
    SERVICE: _Noun("Service", "service", "services"),
    POLICY: _Noun("NetworkPolicy", "policy", "policies"),
}


def noun(kind: Kind) -> str:
    """The kind in messages: pod, service, policy."""
    return _NOUNS[kind].one


def kind_title(kind: Kind) -> str:
    """The kind in reasons: Pod, Service, NetworkPolicy."""
    return _NOUNS[kind].title


@dataclass(frozen=True)
class Done:
    """One object a pass created, deleted or updated."""

    verb: Verb
    kind: Kind
    name: str


def failed(verb: Verb, kind: Kind, name: str, err: ApiError) -> Event:
    """The Warning for an API call that failed."""
    return Event(
        type="Warning",
        reason=f"Failed{verb.title}{kind_title(kind)}",
        message=f"Error {verb.doing} {noun(kind)} {name}: {err}",
    )


def _done_message(verb: Verb, kind: Kind, names: Sequence[str]) -> str:
    """'Created pod: a', or 'Created 3 pods: a, b, c' naming as many as fit (and N more)."""
    words = _NOUNS[kind]
    if len(names) == 1:
        return f"{verb.past} {words.one}: {names[0]}"
    head = f"{verb.past} {len(names)} {words.many}: "
    shown: list[str] = []
    length = len(head)
    for i, name in enumerate(names):
        rest = len(names) - i - 1
        length += len(name) + (2 if shown else 0)
        if length + (len(f" (and {rest} more)") if rest else 0) > _MAX_GROUPED_MESSAGE:
            break
        shown.append(name)
    more = len(names) - len(shown)
    return head + ", ".join(shown) + (f" (and {more} more)" if more else "")


def grouped(outcomes: Sequence[Done | Event]) -> list[Event]:
    """One Normal event per verb and kind, naming the objects, then every other event as is."""
    done: dict[tuple[Verb, Kind], list[str]] = {}
    others: list[Event] = []
    for outcome in outcomes:
        if isinstance(outcome, Done):
            done.setdefault((outcome.verb, outcome.kind), []).append(outcome.name)
        else:
            others.append(outcome)
    named = [
        Event(
            type="Normal",
            reason=f"Successful{verb.title}{kind_title(kind)}",
            message=_done_message(verb, kind, names),
        )
        for (verb, kind), names in done.items()
    ]
    return named + others


def log_api_error(err: ApiError) -> None:
    """A 403 (missing RBAC) at ERROR, anything else at WARNING."""
    if isinstance(err, Forbidden):
        logger.error("%s", err)
    else:
        logger.warning("%s", err)


class EventRecorder:
    """Posts events on TFJobs (core/v1 Events, what `kubectl describe tfjob` shows)."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube
        self._reported: dict[JobKey, set[str]] = {}  # Failed* warnings posted, per job

    async def post(self, key: JobKey, body: dict[str, Any], events: Sequence[Event]) -> None:
        """Log and post `events` concurrently; a Failed* Warning already posted is skipped."""
        reported = self._reported.setdefault(key, set())
        todo = []
        for event in events:
            if event.type == "Warning" and event.reason.startswith("Failed"):
                if event.message in reported:
                    continue
                reported.add(event.message)
            level = logging.WARNING if event.type == "Warning" else logging.INFO
            logger.log(level, "%s/%s: %s: %s", *key, event.reason, event.message)
            todo.append(self._post(body, event))
        await asyncio.gather(*todo)

    def clear(self, key: JobKey) -> None:
        """Forget the warnings posted for the job (a clean pass, or the job is gone)."""
        self._reported.pop(key, None)

    async def _post(self, body: dict[str, Any], event: Event) -> None:
        try:
            await self.kube.post_event(body, event.type, event.reason, event.message)
        except ApiError as err:
            log_api_error(err)
