"""One reconcile pass of one TFJob: read what exists, ask the engine, carry out its Plan.

    controller = Controller(settings: OperatorSettings, kube: KubeClient)
    controller.job_seen(body)              # a TFJob watch event (ADDED/MODIFIED/listing)
    controller.job_gone(namespace, name)   # a TFJob DELETED event
    controller.child_seen(namespace, job)  # a pod/service/NetworkPolicy of the job changed
    await controller.reconcile((namespace, name)) -> datetime | None      # next wake-up
    await controller.close()

A pass (level-triggered, idempotent; see `taas_operator.engine.lifecycle` for the rules):
1. the TFJob from the cache the watch keeps (refreshed by every status write; one GET only when
   it is missing); managedBy another controller or being deleted -> nothing;
2. a spec the models refuse (stored while an older CRD was installed) -> condition Failed with
   the field and fix, a Warning event `InvalidTFJobSpec`, once; never a retry loop; the same
   for a pod template the apiserver refuses when the pod is created (422: the CRD keeps pod
   templates open, so e.g. a containerPort of 70000 is only caught there);
3. pods, services (and NetworkPolicies) listed by the job's labels, concurrently, fresh from the
   apiserver; objects controlled by another incarnation of the same name are ignored. Not for
   a job without status (its first pass: nothing of TaaS exists yet; a name found taken when
   creating makes the next pass list);
4. `engine.reconcile` -> Plan; status written FIRST (PUT with the read resourceVersion: a
   conflict means the cache was stale, so the job is read again and the pass repeated), then
   deletions and creations concurrently, then the plan's events, then the TTL deletion;
5. the NetworkPolicy `<job>` is created or corrected when `settings.network_policy` is on;
6. the plan's `requeue_at` is returned, so the work queue wakes the job exactly then.
The ADDED watch events of the objects a pass created start no further pass (`echoes.Echoes`);
every other child event does. Creations and deletions of one kind make one Normal event per
pass naming the objects ("Created 60 pods: a, b, ... (and N more)"); every distinct error its
own Warning.
Kubeflow's own TFJob CRD (a migration with `crds.install=false`) has a structural status schema
without TaaS's `status.recreations`, so the apiserver prunes it from every status write. The
Controller notices (one warning in the log) and keeps the recreations it wrote in memory, putting
them back into the job before each pass, so backoffLimit still counts recreations while the
process lives; a restarted operator starts those counts at 0 (container restarts, Kubeflow's
own measure, are still counted from the pods).
Failed API calls become Warning events (once per distinct error) and an exception, so the work
queue retries with backoff; 403s name the missing verb and resource.

Deliberately no finalizer: deleting a TFJob never waits for the operator; its pods, services and
NetworkPolicy carry a controller ownerReference, so Kubernetes' garbage collector removes them.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Hashable
from datetime import UTC, datetime
from typing import Any

from taas_operator.api import TFJobStatus, TFJobValidationError, parse_tfjob
from taas_operator.api import constants as c
from taas_operator.api.models import TFJob
from taas_operator.controller.echoes import Echoes, Ref
from taas_operator.controller.kube import (
    POD,
    POLICY,
    SERVICE,
    ApiError,
    Conflict,
    Forbidden,
    Invalid,
    Kind,
    KubeClient,
    NotFound,
)
from taas_operator.controller.workqueue import WorkQueue
from taas_operator.engine import (
    BuildOptions,
    ObservedPod,
    Plan,
    desired_network_policy,
    job_selector,
    reconcile,
    set_condition,
)
from taas_operator.settings import OperatorSettings

logger = logging.getLogger("taas_operator.controller")

JobKey = tuple[str, str]
_NAMES = {POD: ("Pod", "pod"), SERVICE: ("Service", "service"), POLICY: ("NetworkPolicy", "policy")}
# replica-type label value (lowercase) -> the tfReplicaSpecs key, for messages
_REPLICA_KEYS = {kind.lower(): kind for kind in c.REPLICA_TYPES}
_PLURALS = {"pod": "pods", "service": "services", "policy": "policies"}
# "Successful<Verb><Kind>" -> (past tense, noun) of the per-object message "<past> <noun>: <name>"
_DONE_REASONS = {
    f"Successful{verb}{title}": (past, noun)
    for verb, past in (("Create", "Created"), ("Delete", "Deleted"))
    for title, noun in _NAMES.values()
}
#: An Event's message is capped at 1024 characters (kube._MAX_EVENT_MESSAGE); stay under it.
_MAX_GROUPED_MESSAGE = 1000


class ReconcileError(RuntimeError):
    """Some API calls of a pass failed; the work queue retries the job later."""


def _rv(body: dict[str, Any]) -> int:
    try:
        return int((body.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:  # opaque by contract; etcd-backed servers use integers
        return 0


def _key(body: dict[str, Any]) -> JobKey:
    meta = body.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def _owned_by(obj: dict[str, Any], uid: str) -> bool:
    """Ours unless its controller owner is another object (e.g. an older job of the same name)."""
    refs = [
        r for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")
    ]
    return not refs or any(r.get("uid") == uid for r in refs)


def _names(objs: list[dict[str, Any]]) -> list[str]:
    return [str(o["metadata"]["name"]) for o in objs]


def _done_message(past: str, noun: str, names: list[str]) -> str:
    """'Created pod: a', or 'Created 3 pods: a, b, c' naming as many as fit (and N more)."""
    if len(names) == 1:
        return f"{past} {noun}: {names[0]}"
    head = f"{past} {len(names)} {_PLURALS[noun]}: "
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


def _grouped(events: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """One Normal event per reason (kind and verb) for this pass, naming the objects; every
    Warning kept as it is (one per distinct error, deduplicated when posted)."""
    done: dict[str, tuple[str, str, list[str]]] = {}
    out: list[tuple[str, str, str]] = []
    for type_, reason, message in events:
        if type_ != "Normal" or reason not in _DONE_REASONS:
            out.append((type_, reason, message))
            continue
        past, noun = _DONE_REASONS[reason]
        name = message.removeprefix(f"{past} {noun}: ")
        done.setdefault(reason, (past, noun, []))[2].append(name)
    grouped = [
        ("Normal", reason, _done_message(past, noun, names))
        for reason, (past, noun, names) in done.items()
    ]
    return grouped + out


class Controller:
    """Holds the TFJob cache, the work queue and the API client; one per operator process."""

    def __init__(self, settings: OperatorSettings, kube: KubeClient) -> None:
        self.settings, self.kube = settings, kube
        self.options = BuildOptions.from_settings(settings)
        self.jobs: dict[JobKey, dict[str, Any]] = {}
        # a quarter of the API concurrency: one pass alone issues many calls at once
        self.queue = WorkQueue(self._reconcile_key, max_running=max(2, settings.concurrency // 4))
        self._reported: dict[JobKey, set[str]] = {}
        # job -> (uid, status.recreations as written) where the CRD's schema pruned them
        self._pruned: dict[JobKey, tuple[str, dict[str, Any]]] = {}
        self._warned_pruning = False
        self._echoes = Echoes()  # ADDED events of our own creations start no pass
        self._must_list: set[JobKey] = set()  # jobs whose next pass must LIST their children
        self._taken: set[JobKey] = set()  # jobs where this pass found a name already taken

    # -- triggers (from the kopf handlers) ------------------------------------------------------
    def job_seen(self, body: dict[str, Any], event_type: str | None = None) -> None:
        """A TFJob was listed, added or modified: cache the newest version and reconcile it.

        The echo of our own status write (a version already cached, or the one a write still
        waiting for its answer made) starts no pass.
        """
        key = _key(body)
        cached = self.jobs.get(key)
        if (
            cached is not None
            and cached["metadata"].get("uid") == body["metadata"].get("uid")
            and 0 < _rv(body) <= _rv(cached)
        ):
            return
        self._remember(body)
        rv = str(body["metadata"].get("resourceVersion") or "")
        if self._echoes.seen(key, (c.PLURAL, key[1]), event_type, rv):
            self.queue.request(key)

    def job_gone(self, namespace: str, name: str) -> None:
        """A TFJob was deleted: forget it (its children go with their owner reference)."""
        self.jobs.pop((namespace, name), None)
        self._echoes.forget((namespace, name))
        self._must_list.discard((namespace, name))
        self._reported.pop((namespace, name), None)
        self._pruned.pop((namespace, name), None)
        self.queue.forget((namespace, name))

    def child_seen(
        self,
        namespace: str,
        job_name: str,
        event_type: str | None = None,
        ref: Ref | None = None,
        rv: str = "",
    ) -> None:
        """A pod, service or NetworkPolicy (`ref` = (plural, name)) of the job changed or
        vanished; the ADDED event of an object this process has just created starts no pass."""
        key = (namespace, job_name)
        if ref is not None and not self._echoes.seen(key, ref, event_type, rv):
            logger.debug("%s/%s: echo of our creation of %s %s", *key, *ref)
            return
        self.queue.request(key)

    async def close(self) -> None:
        await self.queue.close()

    def _remember(self, body: dict[str, Any]) -> None:
        key = _key(body)
        cached = self.jobs.get(key)
        same = cached is not None and cached["metadata"].get("uid") == body["metadata"].get("uid")
        if not same or _rv(body) >= _rv(cached or {}):
            self.jobs[key] = body

    # -- one pass -------------------------------------------------------------------------------
    async def _reconcile_key(self, key: Hashable) -> datetime | None:
        assert isinstance(key, tuple)
        return await self.reconcile(key)

    async def reconcile(self, key: JobKey) -> datetime | None:
        """Run one pass for the job; return when it must run again (None: on the next event)."""
        logger.debug("reconciling %s/%s", *key)
        body = self.jobs.get(key)
        if body is None:
            body = await self.kube.get_job(*key)
            if body is None:
                return None
            self._remember(body)
        spec = body.get("spec") or {}
        managed_by = (spec.get("runPolicy") or {}).get("managedBy") or ""
        if managed_by not in c.OWN_MANAGERS:
            logger.debug("%s/%s: managedBy %r, left alone", *key, managed_by)
            return None
        if (body.get("metadata") or {}).get("deletionTimestamp"):
            return None
        try:
            job = parse_tfjob(self._restore_pruned(key, body))
        except TFJobValidationError as err:
            await self._reject(key, body, "; ".join(str(e) for e in err.errors))
            return None
        return await self._reconcile_job(key, body, job)

    async def _reconcile_job(
        self, key: JobKey, body: dict[str, Any], job: TFJob
    ) -> datetime | None:
        namespace, uid = job.namespace, job.metadata.uid or ""
        self._echoes.forget(key)
        listed = self._must_list_children(key, body)
        found: list[list[dict[str, Any]]] = [[], [], []]
        if listed:
            logger.debug("%s/%s: listing its children", *key)
            selector = job_selector(job.name)
            listings = [
                self.kube.list(POD, namespace, selector),
                self.kube.list(SERVICE, namespace, selector),
            ]
            if self.settings.network_policy:
                listings.append(self.kube.list(POLICY, namespace, selector))
            found = await asyncio.gather(*listings)
            self._must_list.discard(key)
        pods, services = ([o for o in objs if _owned_by(o, uid)] for objs in found[:2])
        policies = [o for o in found[2] if _owned_by(o, uid)] if len(found) > 2 else []
        observed = [p for p in map(ObservedPod.from_manifest, pods) if p is not None]
        now = datetime.now(UTC)
        plan = reconcile(job, observed, now, services=_names(services), options=self.options)
        if plan.skipped:
            return None
        if plan.status_changed:
            try:
                body = await self._write_status(key, body, plan.status.to_dict())
            except Conflict:
                logger.debug("%s/%s: status conflict, reading the job again", *key)
                fresh = await self.kube.get_job(*key)
                if fresh is not None:
                    self.jobs[key] = fresh
                    self.queue.request(key)
                return None
            except NotFound:
                self.job_gone(*key)
                return None
            self._remember(body)
            self._check_pruned(key, uid, plan.status.to_dict(), body)
        errors, invalid = await self._apply(body, job, plan, policies)
        if key in self._taken:  # a name we meant to create exists: look at what is there
            self._taken.discard(key)
            if not listed:
                self._must_list.add(key)
                self.queue.request(key)
        await self._post_events(key, body, [(e.type, e.reason, e.message) for e in plan.events])
        if invalid:  # a permanent error: retrying would fail the same way forever
            await self._reject(key, self.jobs.get(key, body), "; ".join(invalid))
            return None
        if plan.delete_job and not errors:
            await self._delete_job(key, body, job)
            return None
        if errors:
            raise ReconcileError(f"{namespace}/{job.name}: " + "; ".join(errors))
        self._reported.pop(key, None)
        return plan.requeue_at

    async def _write_status(
        self, key: JobKey, body: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        """PUT the status; the MODIFIED event it causes starts no pass, even when it comes
        before the answer (a resourceVersion-checked write: any other change makes it fail)."""
        ref = (c.PLURAL, key[1])
        self._echoes.expect(key, ref, "MODIFIED")
        written: dict[str, Any] | None = None
        try:
            written = await self.kube.replace_job_status(body, status)
            return written
        finally:
            rv = str(((written or {}).get("metadata") or {}).get("resourceVersion") or "")
            if self._echoes.created(key, ref, rv or None):
                self.queue.request(key)

    def _must_list_children(self, key: JobKey, body: dict[str, Any]) -> bool:
        """Whether the pass must LIST the job's children. Not for a job with no status yet: its
        first pass writes the status before creating anything, so no pass of TaaS has made
        children for it; should some exist anyway (made by another controller), creating one
        finds the name taken and the next pass lists them."""
        return key in self._must_list or bool(body.get("status"))

    # -- a CRD schema that prunes status.recreations (Kubeflow's) --------------------------------
    def _restore_pruned(self, key: JobKey, body: dict[str, Any]) -> dict[str, Any]:
        """The job with the recreations we wrote put back, where the stored status lost them."""
        kept = self._pruned.get(key)
        status = body.get("status") or {}
        if kept is None or "recreations" in status:
            return body
        uid, recreations = kept
        if (body.get("metadata") or {}).get("uid") != uid:
            return body
        return {**body, "status": {**status, "recreations": copy.deepcopy(recreations)}}

    def _check_pruned(
        self, key: JobKey, uid: str, written: dict[str, Any], stored: dict[str, Any]
    ) -> None:
        """After a status write: keep `recreations` in memory if the apiserver dropped them."""
        recreations = written.get("recreations") or {}
        if not recreations or "recreations" in (stored.get("status") or {}):
            self._pruned.pop(key, None)
            return
        self._pruned[key] = (uid, copy.deepcopy(recreations))
        if not self._warned_pruning:
            self._warned_pruning = True
            logger.warning(
                "the installed TFJob CRD prunes status.recreations (Kubeflow's CRD?): "
                "backoffLimit counts pod recreations only while this operator process runs; "
                "apply manifests/crd/tfjobs.kubeflow.org.yaml to keep them in the job's status"
            )

    # -- carrying out a plan --------------------------------------------------------------------
    async def _apply(
        self, body: dict[str, Any], job: TFJob, plan: Plan, policies: list[dict[str, Any]]
    ) -> tuple[list[str], list[str]]:
        """Deletions and creations, concurrently; returns (error messages, the refusals of
        objects the apiserver found invalid, each naming the replica and the field)."""
        ns = job.namespace
        actions = [
            *(self._act("delete", POD, ns, name) for name in plan.delete_pods),
            *(self._act("delete", SERVICE, ns, name) for name in plan.delete_services),
            *(
                self._act("create", POD, ns, m["metadata"]["name"], m, job.name)
                for m in plan.create_pods
            ),
            *(
                self._act("create", SERVICE, ns, m["metadata"]["name"], m, job.name)
                for m in plan.create_services
            ),
        ]
        if self.settings.network_policy and not plan.delete_job:
            actions.append(self._sync_policy(job, policies))
        results = await asyncio.gather(*actions)
        events = _grouped([r for r in results if r is not None])
        await self._post_events(_key(body), body, events)
        warnings = [message for type_, _, message in events if type_ == "Warning"]
        invalid = [message for _, reason, message in events if reason.startswith("Invalid")]
        return warnings, invalid

    async def _act(
        self,
        verb: str,
        kind: Kind,
        ns: str,
        name: str,
        manifest: dict[str, Any] | None = None,
        job_name: str = "",
    ) -> tuple[str, str, str] | None:
        """One create/delete; returns the event to record (None when nothing happened).
        A creation for `job_name` tells the Echoes to expect its ADDED event."""
        title, noun = _NAMES[kind]
        job_key, ref = (ns, job_name), (kind.plural, name)
        if verb == "create" and job_name:
            self._echoes.expect(job_key, ref)
        made: dict[str, Any] | None = None
        try:
            if verb == "create":
                assert manifest is not None
                made = await self.kube.create(kind, ns, manifest)
                done = made is not None
                if not done and job_name:
                    self._taken.add(job_key)
            else:
                done = await self.kube.delete(kind, ns, name)
        except Invalid as err:
            replica = ((manifest or {}).get("metadata") or {}).get("labels", {})
            kind_of = _REPLICA_KEYS.get(replica.get(c.LABEL_REPLICA_TYPE, ""), "<type>")
            return (
                "Warning",
                f"Invalid{title}",
                f"the apiserver refused {noun} {name}: {err.server_message}; fix "
                f"spec.tfReplicaSpecs.{kind_of}.template",
            )
        except ApiError as err:
            self._log_api_error(err)
            failed = "FailedCreate" if verb == "create" else "FailedDelete"
            return ("Warning", f"{failed}{title}", f"Error {verb[:-1]}ing {noun} {name}: {err}")
        finally:
            if verb == "create" and job_name:
                rv = str(((made or {}).get("metadata") or {}).get("resourceVersion") or "")
                if self._echoes.created(job_key, ref, rv or None):
                    self.queue.request(job_key)
        if not done:
            return None
        past = "Created" if verb == "create" else "Deleted"
        return ("Normal", f"Successful{verb.capitalize()}{title}", f"{past} {noun}: {name}")

    async def _sync_policy(
        self, job: TFJob, policies: list[dict[str, Any]]
    ) -> tuple[str, str, str] | None:
        """Create the job's NetworkPolicy, or put its spec back if someone changed it."""
        desired = desired_network_policy(job, self.settings.network_policy_extra_namespaces)
        current = next((p for p in policies if p["metadata"]["name"] == job.name), None)
        if current is None:
            return await self._act("create", POLICY, job.namespace, job.name, desired, job.name)
        if current.get("spec") == desired["spec"]:
            return None
        try:
            await self.kube.replace_spec(POLICY, job.namespace, job.name, desired["spec"])
        except ApiError as err:
            self._log_api_error(err)
            return ("Warning", "FailedUpdateNetworkPolicy", f"Error updating policy: {err}")
        return ("Normal", "SuccessfulUpdateNetworkPolicy", f"Updated policy: {job.name}")

    async def _delete_job(self, key: JobKey, body: dict[str, Any], job: TFJob) -> None:
        """ttlSecondsAfterFinished has passed: remove the TFJob (and its NetworkPolicy)."""
        if self.settings.network_policy:
            await self._act("delete", POLICY, job.namespace, job.name)
        try:
            await self.kube.delete_job(job.namespace, job.name, job.metadata.uid or "")
        except Conflict:  # the uid precondition: a new job of that name; leave it
            return
        logger.info("%s/%s: deleted after ttlSecondsAfterFinished", *key)
        self.job_gone(*key)

    # -- bad input ------------------------------------------------------------------------------
    async def _reject(self, key: JobKey, body: dict[str, Any], problem: str) -> None:
        """A spec the models or the apiserver refuse: Failed condition + Warning event, once."""
        try:
            status = TFJobStatus.model_validate(body.get("status") or {})
        except ValueError:
            status = TFJobStatus()
        message = f"TFJob {key[0]}/{key[1]} has an invalid spec: {problem}"
        failed = status.condition(c.COND_FAILED)
        if failed is not None and failed.status == "True":
            return
        now = datetime.now(UTC).replace(microsecond=0)
        if status.condition(c.COND_CREATED) is None:
            set_condition(
                status, c.COND_CREATED, "True", c.REASON_CREATED, f"TFJob {key[1]} is created.", now
            )
        set_condition(status, c.COND_FAILED, "True", c.REASON_INVALID_SPEC, message, now)
        status.completion_time = status.completion_time or now
        logger.warning("%s", message)
        try:
            new = await self._write_status(key, copy.deepcopy(body), status.to_dict())
        except Conflict:
            fresh = await self.kube.get_job(*key)
            if fresh is not None:
                self.jobs[key] = fresh
                self.queue.request(key)
            return
        except NotFound:
            self.job_gone(*key)
            return
        self._remember(new)
        await self._post_events(key, new, [("Warning", c.REASON_INVALID_SPEC, message)])

    # -- events and errors ----------------------------------------------------------------------
    async def _post_events(
        self, key: JobKey, body: dict[str, Any], events: list[tuple[str, str, str]]
    ) -> None:
        """Post events; a Warning repeated by later retries is posted only once."""
        reported = self._reported.setdefault(key, set())
        todo = []
        for type_, reason, message in events:
            if type_ == "Warning" and reason.startswith("Failed"):
                if message in reported:
                    continue
                reported.add(message)
            level = logging.WARNING if type_ == "Warning" else logging.INFO
            logger.log(level, "%s/%s: %s: %s", *key, reason, message)
            todo.append(self._post_event(body, type_, reason, message))
        await asyncio.gather(*todo)

    async def _post_event(
        self, body: dict[str, Any], type_: str, reason: str, message: str
    ) -> None:
        try:
            await self.kube.post_event(body, type_, reason, message)
        except ApiError as err:
            self._log_api_error(err)

    @staticmethod
    def _log_api_error(err: ApiError) -> None:
        if isinstance(err, Forbidden):
            logger.error("%s", err)
        else:
            logger.warning("%s", err)
