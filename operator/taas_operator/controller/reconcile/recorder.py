"""The events the operator records on a TFJob, and how API errors are logged.

    Done(verb, kind, name)                  # one object created, deleted or updated
    pass_events(done, problems, planned) -> list[Event]   # what one pass posts
    failed(verb, kind, name, err) -> Event  # Warning Failed<Verb><Kind>
    recorder = EventRecorder(kube)
    await recorder.post(key, job_body, events)
    recorder.clear(key)                     # a pass ended without errors; also: the job is gone
    log_api_error(err)

One event per pass for what it did (a product decision, issue 14): what a user reading
`kubectl describe tfjob` needs is each transition of the job (Kubeflow's TFJobCreated,
TFJobRunning, TFJobSucceeded, ... reasons) and which objects were made or removed, not one line
per kind. So the objects a pass created, deleted or updated are named in the pass's first
Normal lifecycle event ("TFJob x is created. Created 60 pods: a, b, ... (and N more). Created
60 services: ... Created policy: x"), or, in a pass without a transition, in one event of their
own (reason `SuccessfulCreatePod` for one kind as Kubeflow names it, `SuccessfulCreate` for
several, as Kubernetes' own controllers do). A one-pod job's creation is then one event where
it was four: its writes per job drop from 9 to 6, what Kubeflow's training-operator writes
(which posts one event per object and none for the creation). Warnings are never merged: a
failed API call (`Failed...`) is posted once per distinct message until the job's next pass
without errors, so a retried failure does not post the same event every backoff.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from taas_operator.api.constants import REASON_WAITING_FOR_NAMES
from taas_operator.api.resources import POD, POD_GROUP, POLICY, SERVICE, Kind
from taas_operator.apiserver.errors import ApiError, Forbidden
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller.watch.jobcache import JobKey
from taas_operator.planner import Event

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
    POD_GROUP: _Noun("PodGroup", "PodGroup", "PodGroups"),
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


def _done_message(verb: Verb, kind: Kind, names: Sequence[str], cap: int) -> str:
    """'Created pod: a', or 'Created 3 pods: a, b, c' naming as many as fit in `cap`
    characters (and N more)."""
    words = _NOUNS[kind]
    if len(names) == 1:
        return f"{verb.past} {words.one}: {names[0]}"
    head = f"{verb.past} {len(names)} {words.many}: "
    shown: list[str] = []
    length = len(head)
    for i, name in enumerate(names):
        rest = len(names) - i - 1
        length += len(name) + (2 if shown else 0)
        if length + (len(f" (and {rest} more)") if rest else 0) > cap:
            break
        shown.append(name)
    more = len(names) - len(shown)
    return head + ", ".join(shown) + (f" (and {more} more)" if more else "")


def _changes(done: Sequence[Done]) -> dict[tuple[Verb, Kind], list[str]]:
    """The objects of a pass by verb and kind, in the order first seen."""
    groups: dict[tuple[Verb, Kind], list[str]] = {}
    for outcome in done:
        groups.setdefault((outcome.verb, outcome.kind), []).append(outcome.name)
    return groups


def _changes_reason(groups: dict[tuple[Verb, Kind], list[str]]) -> str:
    """SuccessfulCreatePod for one kind (Kubeflow's reasons), SuccessfulCreate for several
    kinds made with one verb (Kubernetes' own controllers' reason), else the first verb's."""
    (verb, kind), *rest = groups
    if not rest:
        return f"Successful{verb.title}{kind_title(kind)}"
    return f"Successful{verb.title}"


def pass_events(
    done: Sequence[Done], problems: Sequence[Event], planned: Sequence[Event]
) -> list[Event]:
    """The events one pass posts: the planner's, with every object the pass created,
    deleted or updated named in the first Normal one (one event for the whole pass: "TFJob x
    is created. Created 3 pods: ... Created 3 services: ... Created policy: x"); without such
    a planner event, the objects make one event of their own. Warnings (the planner's, and
    `problems`: failed or refused API calls) stay one event each."""
    groups = _changes(done)
    events = list(planned)
    first = next((i for i, e in enumerate(events) if e.type == "Normal"), None)
    if groups:
        head = events[first].message if first is not None else ""
        budget = (_MAX_GROUPED_MESSAGE - len(head)) // len(groups) - 2
        parts = [_done_message(v, k, names, max(budget, 60)) for (v, k), names in groups.items()]
        if first is None:
            events.insert(
                0, Event(type="Normal", reason=_changes_reason(groups), message=". ".join(parts))
            )
        else:
            merged = " ".join([head, ". ".join(parts)])
            events[first] = events[first].model_copy(update={"message": merged})
    return events + list(problems)


def waiting_for_names(pods: Sequence[str]) -> Event:
    """Pods of an earlier TFJob of the same name still hold these names (they terminate)."""
    shown = ", ".join(sorted(pods)[:5]) + (f" and {len(pods) - 5} more" if len(pods) > 5 else "")
    return Event(
        type="Normal",
        reason=REASON_WAITING_FOR_NAMES,
        message=f"waiting for {shown} of an earlier TFJob of the same name to terminate: "
        f"{'their names are' if len(pods) > 1 else 'its name is'} still taken; this job's "
        f"pods are created as soon as they are gone (nothing of the old job is reused)",
    )


def log_api_error(err: ApiError) -> None:
    """A 403 of RBAC (a missing verb) at ERROR, anything else at WARNING (a 403 of an
    admission such as Pod Security or a quota is no missing verb)."""
    if type(err) is Forbidden:
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
