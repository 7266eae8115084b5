"""Carrying out a Plan's object changes: pods, services, the job's NetworkPolicy and PodGroup,
the TTL delete.

    actions = Actions(kube, expectations, request, network_policy=True, extra_namespaces=(),
                      progress_namespace="", options=BuildOptions())
    await actions.apply(job, plan, children) -> Applied     # children: what exists, as read
    await actions.delete_job(job, children) -> bool         # ttlSecondsAfterFinished passed
    await actions.close()                                   # the operator stops: its timers

`apply` deletes `plan.delete_pods`/`delete_services` and creates `plan.create_pods`/
`create_services` concurrently, and creates the NetworkPolicy `<job>` (or puts its spec back if
someone changed it) when `network_policy` is on. Every creation expects its ADDED watch event
(`expectations.expecting_echo`), so the echo of the operator's own write starts no pass. A creation
that finds the name taken (AlreadyExists) by the job's own object or an earlier TFJob's of the
same name is not an error: `Applied.name_taken` tells the pass to look at what is there. One
that finds it held by an object no TFJob of the name controls leaves it alone and reports it
(`Applied.not_owned`: the pass fails the job naming it). Every deletion and update is of an
object the job controls, as read, and conditional on its uid (`owned`). A pod or service the
apiserver refuses as invalid (400/422: the CRD keeps pod templates open, so e.g. a
containerPort of 70000 is only caught here) is reported as `Invalid<Kind>` naming the replica
type's template; any other failed call as `Failed<Verb><Kind>`.
Pods are created in slow-start rounds (`planner.batches`).

With gang scheduling on (`options.gang_scheduler`), the job's PodGroup is made (or its spec put
back) before its pods, and written again while the job's gang waits (`podgroups`).

Kueue's pod groups (`options.kueue_pod_groups`, `planner.kueue`): `plan.release_pods` lose
Kueue's finalizer and `plan.close_pods` get `kueue.x-k8s.io/retriable-in-group: "false"`, each
one strategic-merge patch of the pod's metadata (the `patch` verb on pods), alongside the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from taas_operator.api import constants as c
from taas_operator.api.models import TFJob
from taas_operator.api.resources import POD, POLICY, SERVICE, Kind
from taas_operator.apiserver.errors import (
    PSA_ENFORCE_LABEL,
    ApiError,
    Conflict,
    Invalid,
    PodSecurityRefused,
)
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller.reconcile.owned import NotOwned, Owned, holder
from taas_operator.controller.reconcile.podgroups import PodGroups
from taas_operator.controller.reconcile.recorder import (
    CREATE,
    DELETE,
    UPDATE,
    Done,
    failed,
    kind_title,
    log_api_error,
    noun,
)
from taas_operator.controller.seen import Seen
from taas_operator.controller.watch.children import Children
from taas_operator.controller.watch.expectations import Expectations, expecting_echo
from taas_operator.controller.watch.jobcache import JobKey
from taas_operator.planner import (
    BuildOptions,
    Event,
    Plan,
    desired_network_policy,
)
from taas_operator.planner.batches import SLOW_START

# replica-type label value (lowercase) -> the tfReplicaSpecs key, for messages
_REPLICA_KEYS = {kind.lower(): kind for kind in c.REPLICA_TYPES}


def _replica_label(manifest: dict[str, Any]) -> str:
    return str((manifest["metadata"].get("labels") or {}).get(c.LABEL_REPLICA_TYPE, ""))


@dataclass(frozen=True)
class _Taken:
    """A creation found an object of that name already there."""

    name: str
    pod: bool = False


_Outcome = Done | Event | _Taken | NotOwned | None


@dataclass
class Applied:
    """What `Actions.apply` did: the objects changed, the Warnings of the calls that failed,
    and whether a name was taken."""

    done: list[Done] = field(default_factory=list)
    problems: list[Event] = field(default_factory=list)
    name_taken: bool = False
    #: Pods whose names are still held by another incarnation's pods (being deleted).
    taken_pods: list[str] = field(default_factory=list)
    #: Objects holding a name the job needs that no TFJob of the name controls (left alone).
    not_owned: list[NotOwned] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        """Messages of the calls that failed (the pass is retried)."""
        return [e.message for e in self.problems]

    @property
    def invalid(self) -> list[str]:
        """Messages of the objects the apiserver refused: a permanent error of the spec."""
        return [e.message for e in self.problems if e.reason.startswith("Invalid")]


class Actions:
    """Creates and deletes a job's children through the API."""

    def __init__(
        self,
        kube: KubeClient,
        expectations: Expectations,
        request: Callable[[JobKey], None],
        *,
        network_policy: bool = True,
        extra_namespaces: Sequence[str] = (),
        progress_namespace: str = "",
        options: BuildOptions | None = None,
    ) -> None:
        self.kube, self.expectations, self.request = kube, expectations, request
        self.owned = Owned(kube)
        self.options = options or BuildOptions()
        self.pod_groups = PodGroups(kube, self.owned, self.options)
        self.network_policy, self.extra_namespaces = network_policy, tuple(extra_namespaces)
        self.progress_namespace = progress_namespace  # admitted to the chief's progress port

    async def apply(self, job: TFJob, plan: Plan, children: Children) -> Applied:
        """Deletions and creations of `plan`, concurrently (and the NetworkPolicy); the
        PodGroup first, so that no pod reaches the gang scheduler before its group.
        `children`: the job's objects as the pass read them."""
        self.pod_groups.follow(job, plan)
        group = None
        if not plan.delete_job and not plan.status.finished:
            group = await self.pod_groups.sync(job)
            if isinstance(group, Event):  # pods without their group would never be placed
                return Applied(problems=[group])
            if isinstance(group, NotOwned):  # nor would they join another's group
                return Applied(not_owned=[group])
        uid, seen = job.metadata.uid or "", children.seen
        deletions = [
            *(self._delete(uid, seen(POD, name)) for name in plan.delete_pods),
            *(self._delete(uid, seen(POD, name), 0) for name in plan.force_delete_pods),
            *(self._delete(uid, seen(SERVICE, name)) for name in plan.delete_services),
        ]
        calls = [
            *(self._create(SERVICE, job, m, children) for m in plan.create_services),
            *(self._release(uid, seen(POD, name)) for name in plan.release_pods),
            *(self._close(uid, seen(POD, name)) for name in plan.close_pods),
        ]
        if self.network_policy and not plan.delete_job:
            calls.append(self._sync_policy(job, children))
        deleted, pods, done = await asyncio.gather(
            asyncio.gather(*deletions),
            self._create_pods(job, plan.create_pods, children),
            asyncio.gather(*calls),
        )
        outcomes = [group, *deleted, *pods, *done]
        return Applied(
            done=[o for o in outcomes if isinstance(o, Done)],
            problems=[o for o in outcomes if isinstance(o, Event)],
            name_taken=any(isinstance(o, _Taken) for o in outcomes),
            taken_pods=[o.name for o in outcomes if isinstance(o, _Taken) and o.pod],
            not_owned=[o for o in outcomes if isinstance(o, NotOwned)],
        )

    async def close_groups(self, pods: Sequence[Seen]) -> list[Event]:
        """Mark pods of a gone run `retriable-in-group: "false"` (`planner.kueue`): those of a
        deleted job, or of an earlier job of the same name (each checked as controlled by the
        TFJob it was read with); the Warnings of calls that failed."""
        closing = (self._close(pod.owner or "", pod) for pod in pods)
        outcomes = await asyncio.gather(*closing)
        return [o for o in outcomes if isinstance(o, Event)]

    async def close(self) -> None:
        """Stop the PodGroup writes still to come."""
        await self.pod_groups.close()

    def forget(self, key: JobKey) -> None:
        """The job is gone: drop what was remembered of its PodGroup, stop its gang's timer."""
        self.pod_groups.forget(key)

    async def delete_job(self, job: TFJob, children: Children) -> bool:
        """Delete the TFJob (and its NetworkPolicy, when the job controls one of its name);
        False when a new job took its name."""
        if self.network_policy:
            await self._delete(job.metadata.uid or "", children.seen(POLICY, job.name))
        try:
            await self.kube.delete_job(job.namespace, job.name, job.metadata.uid or "")
        except Conflict:  # the uid precondition: a new job of that name; leave it
            return False
        return True

    async def _create_pods(
        self, job: TFJob, manifests: list[dict[str, Any]], children: Children
    ) -> list[_Outcome]:
        """Pods in slow-start rounds: SLOW_START at once, then twice as many each round; a
        round with a failure ends it (the pods not tried wait for the next pass)."""
        outcomes: list[_Outcome] = []
        start, size = 0, SLOW_START
        while start < len(manifests):
            batch = manifests[start : start + size]
            done = await asyncio.gather(*(self._create(POD, job, m, children) for m in batch))
            outcomes += done
            if any(isinstance(o, Event) for o in done):
                break
            start, size = start + size, size * 2
        return outcomes

    async def _create(
        self, kind: Kind, job: TFJob, manifest: dict[str, Any], children: Children
    ) -> _Outcome:
        name = manifest["metadata"]["name"]
        key, ref = (job.namespace, job.name), (kind.plural, name)
        write = self.kube.create(kind, job.namespace, manifest)
        try:
            made = await expecting_echo(self.expectations, self.request, key, ref, "ADDED", write)
        except Invalid as err:
            replica = _REPLICA_KEYS.get(_replica_label(manifest), "<type>")
            return Event(
                type="Warning",
                reason=f"Invalid{kind_title(kind)}",
                message=f"the apiserver refused {noun(kind)} {name}: {err.server_message}; "
                f"fix spec.tfReplicaSpecs.{replica}.template",
            )
        except PodSecurityRefused as err:
            log_api_error(err)
            replica = _REPLICA_KEYS.get(_replica_label(manifest), "<type>")
            event = failed(CREATE, kind, name, err)
            return event.model_copy(
                update={
                    "message": f"{event.message}. Fix: make spec.tfReplicaSpecs.{replica}."
                    f"template meet that level (securityContext: e.g. runAsNonRoot: true, "
                    f"allowPrivilegeEscalation: false, capabilities: {{drop: [ALL]}}, "
                    f"seccompProfile: {{type: RuntimeDefault}}), or have a cluster admin "
                    f"relabel namespace {job.namespace} {PSA_ENFORCE_LABEL}=<level>"
                }
            )
        except ApiError as err:
            log_api_error(err)
            return failed(CREATE, kind, name, err)
        if made is not None:
            return Done(CREATE, kind, name)
        return await self._taken(kind, job, name, children)

    async def _taken(self, kind: Kind, job: TFJob, name: str, children: Children) -> _Outcome:
        """A creation found `name` taken: the job's own or an earlier TFJob's (wait for it), or
        an object no TFJob of the name controls (left alone, reported)."""
        if children.earlier(kind, name):  # the watch shows whose it is: no GET
            return _Taken(name, kind is POD)
        try:
            found = await self.kube.get(kind, job.namespace, name)
        except ApiError as err:
            log_api_error(err)
            return failed(CREATE, kind, name, err)
        if found is not None:
            seen = Seen.read(kind, found)
            if holder(seen, job.metadata.uid or "") == "other":
                return NotOwned(seen)
        return _Taken(name, kind is POD)

    async def _delete(
        self, owner: str, seen: Seen | None, grace_seconds: int | None = None
    ) -> _Outcome:
        """Delete a child the pass read (None: not read as the job's, nothing to delete)."""
        if seen is None:
            return None
        try:
            gone = await self.owned.delete(seen, owner, grace_seconds)
        except NotOwned as err:
            return err
        except ApiError as err:
            log_api_error(err)
            return failed(DELETE, seen.kind, seen.name, err)
        return Done(DELETE, seen.kind, seen.name) if gone else None

    async def _patch_pod(self, owner: str, seen: Seen | None, metadata: dict[str, Any]) -> _Outcome:
        if seen is None:
            return None
        try:
            await self.owned.patch_metadata(seen, owner, metadata)
        except NotOwned as err:
            return err
        except ApiError as err:
            log_api_error(err)
            return failed(UPDATE, POD, seen.name, err)
        return None

    async def _release(self, owner: str, seen: Seen | None) -> _Outcome:
        """Remove Kueue's finalizer from an ended pod TaaS replaces (`planner.kueue`)."""
        removal = {"$deleteFromPrimitiveList/finalizers": [c.KUEUE_FINALIZER]}
        return await self._patch_pod(owner, seen, removal)

    async def _close(self, owner: str, seen: Seen | None) -> _Outcome:
        """Tell Kueue the pod's group will not retry it: the run is over (`planner.kueue`)."""
        closed = {"annotations": {c.KUEUE_RETRIABLE_ANNOTATION: "false"}}
        return await self._patch_pod(owner, seen, closed)

    async def _sync_policy(self, job: TFJob, children: Children) -> _Outcome:
        """Create the job's NetworkPolicy, or put its spec back if someone changed it."""
        desired = desired_network_policy(job, self.extra_namespaces, self.progress_namespace)
        current = children.policies.get(job.name)
        seen = children.seen(POLICY, job.name)
        if current is None or seen is None:
            return await self._create(POLICY, job, desired, children)
        if current == desired["spec"]:
            return None
        try:
            if not await self.owned.replace_spec(seen, job.metadata.uid or "", desired["spec"]):
                return None  # gone or replaced since read: the next pass sees it
        except NotOwned as err:
            return err
        except ApiError as err:
            log_api_error(err)
            return failed(UPDATE, POLICY, job.name, err)
        return Done(UPDATE, POLICY, job.name)
