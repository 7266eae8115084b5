"""Carrying out a Plan's object changes: pods, services, the job's NetworkPolicy and PodGroup,
the TTL delete.

    actions = Actions(kube, echoes, request, network_policy=True, extra_namespaces=(),
                      progress_namespace="", options=BuildOptions())
    await actions.apply(job, plan, policies) -> Applied     # policies: name -> spec existing
    await actions.delete_job(job) -> bool                   # ttlSecondsAfterFinished passed

`apply` deletes `plan.delete_pods`/`delete_services` and creates `plan.create_pods`/
`create_services` concurrently, and creates the NetworkPolicy `<job>` (or puts its spec back if
someone changed it) when `network_policy` is on. Every creation expects its ADDED watch event
(`echoes.expecting_echo`), so the echo of the operator's own write starts no pass. A creation
that finds the name taken (AlreadyExists) is not an error: `Applied.name_taken` tells the pass
to look at what is there. A pod or service the apiserver refuses as invalid (400/422: the CRD
keeps pod templates open, so e.g. a containerPort of 70000 is only caught here) is reported as
`Invalid<Kind>` naming the replica type's template; any other failed call as `Failed<Verb><Kind>`.
Pods are created in slow-start rounds (`engine.batches`).

With gang scheduling on (`options.gang_scheduler`), the job's PodGroup (`engine.desired_pod_group`)
is made before its pods, and its spec put back when the job's wants change (minAvailable,
replicas, requests); finished jobs are left as they are (the PodGroup goes with the job). Not
watched: a pass sends nothing when the PodGroup it last made or checked for this incarnation of
the job already has the wanted spec (remembered per job), so a hand edit of a PodGroup stays
until the job changes or the operator restarts. A missing PodGroup CRD is a `FailedCreatePodGroup`
Warning naming the fix, and the pass is retried with backoff. A changed spec is followed, a
moment later, by one more write (the annotation `taas.dev/pod-group-spec-changed`): coscheduling
(scheduler-plugins v0.33) wakes a waiting gang on the PodGroup's update event but reads the
PodGroup through a second cache that can lag that event, and a gang judged by its old spec (say,
before its `minAvailable` was lowered) would otherwise wait for the scheduler's 5-minute flush
of unschedulable pods.

Kueue's pod groups (`options.kueue_pod_groups`, `engine.kueue`): `plan.release_pods` lose
Kueue's finalizer and `plan.close_pods` get `kueue.x-k8s.io/retriable-in-group: "false"`, each
one strategic-merge patch of the pod's metadata (the `patch` verb on pods), alongside the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from taas_operator.api import constants as c
from taas_operator.api.models import TFJob, format_time
from taas_operator.api.resources import POD_GROUP
from taas_operator.controller.apiserver.kube import (
    POD,
    POLICY,
    PSA_ENFORCE_LABEL,
    SERVICE,
    ApiError,
    Conflict,
    Invalid,
    Kind,
    KubeClient,
    NotFound,
    PodSecurityRefused,
)
from taas_operator.controller.reconcile.events import (
    CREATE,
    DELETE,
    UPDATE,
    Done,
    failed,
    kind_title,
    log_api_error,
    noun,
)
from taas_operator.controller.watch.echoes import Echoes, expecting_echo
from taas_operator.controller.watch.jobcache import JobKey
from taas_operator.engine import (
    BuildOptions,
    Event,
    Plan,
    desired_network_policy,
    desired_pod_group,
)
from taas_operator.engine.batches import SLOW_START

#: Seconds between a PodGroup's spec change and the write that wakes its gang again (above).
POD_GROUP_NUDGE_SECONDS = 2.0

# replica-type label value (lowercase) -> the tfReplicaSpecs key, for messages
_REPLICA_KEYS = {kind.lower(): kind for kind in c.REPLICA_TYPES}


def _replica_label(manifest: dict[str, Any]) -> str:
    return str((manifest["metadata"].get("labels") or {}).get(c.LABEL_REPLICA_TYPE, ""))


@dataclass(frozen=True)
class _Taken:
    """A creation found an object of that name already there."""

    name: str
    pod: bool = False


_Outcome = Done | Event | _Taken | None


@dataclass
class Applied:
    """What `Actions.apply` did: the objects changed, the Warnings of the calls that failed,
    and whether a name was taken."""

    done: list[Done] = field(default_factory=list)
    problems: list[Event] = field(default_factory=list)
    name_taken: bool = False
    #: Pods whose names are still held by another incarnation's pods (being deleted).
    taken_pods: list[str] = field(default_factory=list)

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
        echoes: Echoes,
        request: Callable[[JobKey], None],
        *,
        network_policy: bool = True,
        extra_namespaces: Sequence[str] = (),
        progress_namespace: str = "",
        options: BuildOptions | None = None,
    ) -> None:
        self.kube, self.echoes, self.request = kube, echoes, request
        self.options = options or BuildOptions()
        #: job -> (uid, PodGroup spec) last made or found so (`_sync_pod_group`)
        self._pod_groups: dict[JobKey, tuple[str, dict[str, Any]]] = {}
        self._nudges: set[asyncio.Task[None]] = set()  # `_nudge_pod_group`s not yet done
        self.network_policy, self.extra_namespaces = network_policy, tuple(extra_namespaces)
        self.progress_namespace = progress_namespace  # admitted to the chief's progress port

    async def apply(self, job: TFJob, plan: Plan, policies: dict[str, dict[str, Any]]) -> Applied:
        """Deletions and creations of `plan`, concurrently (and the NetworkPolicy); the
        PodGroup first, so that no pod reaches the gang scheduler before its group."""
        ns = job.namespace
        group = None
        if not plan.delete_job and not plan.status.finished:
            group = await self._sync_pod_group(job)
            if isinstance(group, Event):  # pods without their group would never be placed
                return Applied(problems=[group])
        deletions = [
            *(self._delete(POD, ns, name) for name in plan.delete_pods),
            *(self._delete(POD, ns, name, grace_seconds=0) for name in plan.force_delete_pods),
            *(self._delete(SERVICE, ns, name) for name in plan.delete_services),
        ]
        calls = [
            *(self._create(SERVICE, job, manifest) for manifest in plan.create_services),
            *(self._release(ns, name) for name in plan.release_pods),
            *(self._close(ns, name) for name in plan.close_pods),
        ]
        if self.network_policy and not plan.delete_job:
            calls.append(self._sync_policy(job, policies))
        deleted, pods, done = await asyncio.gather(
            asyncio.gather(*deletions),
            self._create_pods(job, plan.create_pods),
            asyncio.gather(*calls),
        )
        outcomes = [group, *deleted, *pods, *done]
        return Applied(
            done=[o for o in outcomes if isinstance(o, Done)],
            problems=[o for o in outcomes if isinstance(o, Event)],
            name_taken=any(isinstance(o, _Taken) for o in outcomes),
            taken_pods=[o.name for o in outcomes if isinstance(o, _Taken) and o.pod],
        )

    async def close_groups(self, namespace: str, names: Sequence[str]) -> list[Event]:
        """Mark pods of a gone run `retriable-in-group: "false"` (`engine.kueue`): those of a
        deleted job, or of an earlier job of the same name; the Warnings of calls that failed."""
        outcomes = await asyncio.gather(*(self._close(namespace, name) for name in names))
        return [o for o in outcomes if isinstance(o, Event)]

    def forget(self, key: JobKey) -> None:
        """The job is gone: drop what was remembered of its PodGroup."""
        self._pod_groups.pop(key, None)

    async def delete_job(self, job: TFJob) -> bool:
        """Delete the TFJob (and its NetworkPolicy); False when a new job took its name."""
        if self.network_policy:
            await self._delete(POLICY, job.namespace, job.name)
        try:
            await self.kube.delete_job(job.namespace, job.name, job.metadata.uid or "")
        except Conflict:  # the uid precondition: a new job of that name; leave it
            return False
        return True

    async def _create_pods(self, job: TFJob, manifests: list[dict[str, Any]]) -> list[_Outcome]:
        """Pods in slow-start rounds: SLOW_START at once, then twice as many each round; a
        round with a failure ends it (the pods not tried wait for the next pass)."""
        outcomes: list[_Outcome] = []
        start, size = 0, SLOW_START
        while start < len(manifests):
            batch = manifests[start : start + size]
            done = await asyncio.gather(*(self._create(POD, job, m) for m in batch))
            outcomes += done
            if any(isinstance(o, Event) for o in done):
                break
            start, size = start + size, size * 2
        return outcomes

    async def _create(self, kind: Kind, job: TFJob, manifest: dict[str, Any]) -> _Outcome:
        name = manifest["metadata"]["name"]
        key, ref = (job.namespace, job.name), (kind.plural, name)
        write = self.kube.create(kind, job.namespace, manifest)
        try:
            made = await expecting_echo(self.echoes, self.request, key, ref, "ADDED", write)
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
        return _Taken(name, kind is POD) if made is None else Done(CREATE, kind, name)

    async def _delete(
        self, kind: Kind, ns: str, name: str, grace_seconds: int | None = None
    ) -> _Outcome:
        try:
            gone = await self.kube.delete(kind, ns, name, grace_seconds)
        except ApiError as err:
            log_api_error(err)
            return failed(DELETE, kind, name, err)
        return Done(DELETE, kind, name) if gone else None

    async def _release(self, ns: str, name: str) -> _Outcome:
        """Remove Kueue's finalizer from an ended pod TaaS replaces (`engine.kueue`)."""
        removal = {"$deleteFromPrimitiveList/finalizers": [c.KUEUE_FINALIZER]}
        try:
            await self.kube.patch_metadata(POD, ns, name, removal)
        except ApiError as err:
            log_api_error(err)
            return failed(UPDATE, POD, name, err)
        return None

    async def _close(self, ns: str, name: str) -> _Outcome:
        """Tell Kueue the pod's group will not retry it: the run is over (`engine.kueue`)."""
        closed = {"annotations": {c.KUEUE_RETRIABLE_ANNOTATION: "false"}}
        try:
            await self.kube.patch_metadata(POD, ns, name, closed)
        except ApiError as err:
            log_api_error(err)
            return failed(UPDATE, POD, name, err)
        return None

    async def _sync_policy(self, job: TFJob, policies: dict[str, dict[str, Any]]) -> _Outcome:
        """Create the job's NetworkPolicy, or put its spec back if someone changed it
        (`policies`: the job's policies that exist, name -> spec)."""
        desired = desired_network_policy(job, self.extra_namespaces, self.progress_namespace)
        current = policies.get(job.name)
        if current is None:
            return await self._create(POLICY, job, desired)
        if current == desired["spec"]:
            return None
        try:
            await self.kube.replace_spec(POLICY, job.namespace, job.name, desired["spec"])
        except ApiError as err:
            log_api_error(err)
            return failed(UPDATE, POLICY, job.name, err)
        return Done(UPDATE, POLICY, job.name)

    async def _sync_pod_group(self, job: TFJob) -> _Outcome:
        """Create the job's PodGroup, or put its spec back when it differs from the wanted one;
        nothing when gang scheduling is off or this pass's spec was already made or found."""
        desired = desired_pod_group(job, self.options)
        if desired is None:
            return None
        key, uid = (job.namespace, job.name), job.metadata.uid or ""
        if self._pod_groups.get(key) == (uid, desired["spec"]):
            return None
        try:
            made = await self.kube.create(POD_GROUP, job.namespace, desired)
            if made is not None:
                self._pod_groups[key] = (uid, desired["spec"])
                return Done(CREATE, POD_GROUP, job.name)
            current = await self.kube.get(POD_GROUP, job.namespace, job.name) or {}
            owners = (current.get("metadata") or {}).get("ownerReferences") or []
            if uid and not any(o.get("uid") == uid for o in owners):
                return None  # an earlier job's, on its way out with it: made on a later pass
            if current.get("spec") != desired["spec"]:
                await self.kube.replace_spec(POD_GROUP, job.namespace, job.name, desired["spec"])
                self._pod_groups[key] = (uid, desired["spec"])
                self._later(self._nudge_pod_group(job.namespace, job.name))
                return Done(UPDATE, POD_GROUP, job.name)
        except NotFound as err:  # no such resource: the CRD is not installed
            log_api_error(err)
            event = failed(CREATE, POD_GROUP, job.name, err)
            event.message += (
                "; install scheduler-plugins' PodGroup CRD (scheduling.x-k8s.io) or turn gang "
                "scheduling off (--gang-scheduler-name / gangScheduling.schedulerName)"
            )
            return event
        except ApiError as err:
            log_api_error(err)
            return failed(CREATE, POD_GROUP, job.name, err)
        self._pod_groups[key] = (uid, desired["spec"])
        return None

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` beside the passes (a reference is kept until it is done)."""
        task = asyncio.get_running_loop().create_task(work)
        self._nudges.add(task)
        task.add_done_callback(self._nudges.discard)

    async def _nudge_pod_group(self, ns: str, name: str) -> None:
        """Write the PodGroup once more after its spec changed, so coscheduling looks at its
        waiting gang again with the new spec in its cache (the module's docstring says why)."""
        await asyncio.sleep(POD_GROUP_NUDGE_SECONDS)
        stamp = format_time(datetime.now(UTC))
        try:
            await self.kube.annotate(POD_GROUP, ns, name, {c.ANNOTATION_POD_GROUP_CHANGED: stamp})
        except ApiError as err:  # the scheduler's 5-minute flush remains
            log_api_error(err)
