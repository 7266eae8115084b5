"""The TFJob lifecycle as one pure function: (job, observed pods, now) -> Plan.

    reconcile(job: TFJob, pods: Sequence[ObservedPod], now: datetime, *,
              services: Collection[str] | None = None,
              options: BuildOptions | None = None) -> Plan
    status_changed(old: TFJobStatus, new: TFJobStatus) -> bool

Level-triggered: the plan depends only on its inputs (the spec, the status last written, the
pods that exist now, the names of the services that exist now, the time), so calling it again
after a crash or a missed event gives the same plan. `services=None` means "services are not
managed" (the local runner): no service creations or deletions are planned.

How to carry out a Plan (operator and local runner alike):
1. if `plan.skipped`: do nothing (managedBy names another controller, or the job is being
   deleted);
2. if `plan.status_changed`: write `plan.status` (status subresource) FIRST, so a crash before
   the pod work cannot lose a counted recreation (counting is idempotent per pod uid);
3. delete `plan.delete_pods` and `plan.delete_services` (names), create `plan.create_pods` and
   `plan.create_services` (manifests; treat AlreadyExists as success), concurrently;
4. emit `plan.events` (type, reason, message) on the TFJob;
5. if `plan.delete_job`: delete the TFJob (its TTL has passed);
6. if `plan.requeue_at`: reconcile again at that time (activeDeadlineSeconds, TTL), on time.

Rules (Kubeflow's unless marked TaaS):
- Created condition on first sight; startTime when first not suspended.
- success: with Chief/Master, all of them succeeded; else worker 0 succeeded (exit 0), or every
  worker with successPolicy AllWorkers. A job without Chief/Master/Worker never succeeds.
- a Failed pod: Never -> the job fails; OnFailure/Always -> the pod is deleted and recreated
  (Restarting); ExitCode -> exit code >= 128 (or unknown) recreates, 1-127 fails the job.
  With enableDynamicWorker a failed worker does not fail the job (Kubeflow).
- backoffLimit: restarts of live pods under OnFailure/Always/ExitCode plus (TaaS) every
  recreation recorded in status.recreations; reaching the limit (any restart when it is 0) fails
  the job, and the recreation that reached it is not done.
- activeDeadlineSeconds: fails the job at startTime + the deadline; `requeue_at` says when.
- on Succeeded/Failed: completionTime; cleanPodPolicy Running deletes pending and running pods
  and their services, All deletes all, None none; ttlSecondsAfterFinished deletes the job after
  completionTime + TTL. Conditions and replica counts then stay as they were (terminal).
- suspend: delete every pod and service, active counts 0, Running False and Suspended True
  (TFJobSuspended). Resume: Suspended False (TFJobResumed), startTime reset, pods recreated.
- scaling: pods at an index >= replicas (and their services) are deleted, missing ones created.
- TaaS: failure and restart messages name the pod, container and exit code.
- TaaS: a replica the kubelet restarts in place (OnFailure/Always: CrashLoopBackOff, or waiting
  again after a restart) sets Restarting, as a recreated one does; a replica that cannot start
  (ErrImageNeverPull, ImagePullBackOff, CreateContainerConfigError...) sets Running False with
  the kubelet's reason and message. Running comes back once every replica runs; backoffLimit
  and activeDeadlineSeconds end a job that never gets there (the deadline message names the
  waiting replica).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from taas_operator.api import constants as c
from taas_operator.api.models import Recreation, ReplicaStatus, TFJob, TFJobStatus
from taas_operator.engine.conditions import set_condition
from taas_operator.engine.objects import BuildOptions, desired_pod, desired_service
from taas_operator.engine.observed import ObservedPod
from taas_operator.tfjob.cluster_spec import replica_name

_COUNTED_POLICIES = ("OnFailure", "Always", "ExitCode")


class Event(BaseModel):
    """A Kubernetes event to record on the TFJob."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


class Plan(BaseModel):
    """What to do now to move the job toward its desired state."""

    status: TFJobStatus
    status_changed: bool = False
    create_pods: list[dict[str, Any]] = Field(default_factory=list)
    delete_pods: list[str] = Field(default_factory=list)
    create_services: list[dict[str, Any]] = Field(default_factory=list)
    delete_services: list[str] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    delete_job: bool = False
    requeue_at: datetime | None = None
    skipped: str | None = None


def status_changed(old: TFJobStatus, new: TFJobStatus) -> bool:
    """Whether writing `new` would change the stored status."""
    return old.to_dict() != new.to_dict()


def reconcile(
    job: TFJob,
    pods: Sequence[ObservedPod],
    now: datetime,
    *,
    services: Collection[str] | None = None,
    options: BuildOptions | None = None,
) -> Plan:
    """Compute the plan for one job; see the module docstring for the rules."""
    if not job.managed_by_us():
        return Plan(
            status=job.status,
            skipped=f"spec.runPolicy.managedBy is {job.spec.run_policy.managed_by!r}",
        )
    if job.metadata.deletion_timestamp:
        return Plan(status=job.status, skipped="the TFJob is being deleted")
    return _Reconciler(job, pods, _utc(now), services, options or BuildOptions()).run()


def _utc(now: datetime) -> datetime:
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return now.astimezone(UTC).replace(microsecond=0)


def _waiting(pod: ObservedPod) -> str:
    """TaaS: which replica waits and why, in the kubelet's words."""
    why = (
        f"{pod.waiting_reason}: {pod.waiting_message}"
        if pod.waiting_message
        else pod.waiting_reason
    )
    return (
        f"pod {pod.name} ({pod.replica_type} {pod.index}), container {pod.container} is "
        f"waiting: {why}"
    )


def _detail(pod: ObservedPod) -> str:
    """TaaS: which pod, container and exit code a failure came from."""
    code = "unknown" if pod.exit_code is None else str(pod.exit_code)
    reason = f", reason {pod.reason}" if pod.reason else ""
    return f"pod {pod.name}, container {pod.container}, exit code {code}{reason}"


class _Reconciler:
    """One reconcile pass; holds the working status and the plan being built."""

    def __init__(
        self,
        job: TFJob,
        pods: Sequence[ObservedPod],
        now: datetime,
        services: Collection[str] | None,
        options: BuildOptions,
    ) -> None:
        self.job, self.now, self.services, self.options = job, now, services, options
        self.pods = list(pods)
        self.status = job.status.model_copy(deep=True)
        self.plan = Plan(status=self.status)
        self.name, self.ns = job.name, job.namespace
        self.specs = job.spec.tf_replica_specs

    # -- helpers --------------------------------------------------------------------------------
    def event(self, type_: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        self.plan.events.append(Event(type=type_, reason=reason, message=message))

    def condition(
        self,
        type_: str,
        value: Literal["True", "False"],
        reason: str,
        message: str,
        event: Literal["Normal", "Warning"] | None = "Normal",
    ) -> bool:
        changed = set_condition(self.status, type_, value, reason, message, self.now)
        if changed and event:
            self.event(event, reason, message)
        return changed

    def delete_pod(self, pod: ObservedPod, with_service: bool = True) -> None:
        if not pod.deleting and pod.name not in self.plan.delete_pods:
            self.plan.delete_pods.append(pod.name)
        if with_service:
            self.delete_service(pod.name)

    def delete_service(self, name: str) -> None:
        wanted = self.services is not None and name in self.services
        if wanted and name not in self.plan.delete_services:
            self.plan.delete_services.append(name)

    def requeue(self, at: datetime) -> None:
        if self.plan.requeue_at is None or at < self.plan.requeue_at:
            self.plan.requeue_at = at

    def finish(self) -> Plan:
        self.plan.status = self.status
        self.plan.status_changed = status_changed(self.job.status, self.status)
        return self.plan

    # -- the pass -------------------------------------------------------------------------------
    def run(self) -> Plan:
        if self.status.condition(c.COND_CREATED) is None:
            self.condition(
                c.COND_CREATED, "True", c.REASON_CREATED, f"TFJob {self.name} is created."
            )
        if self.status.finished:
            self.cleanup()
            return self.finish()
        if self.job.spec.run_policy.suspend:
            self.suspend()
            return self.finish()
        if self.status.is_true(c.COND_SUSPENDED):
            self.condition(
                c.COND_SUSPENDED, "False", c.REASON_RESUMED, f"TFJob {self.name} is resumed."
            )
            self.status.start_time = self.now
        if self.status.start_time is None:
            self.status.start_time = self.now
        self.run_active()
        return self.finish()

    def cleanup(self) -> None:
        """Finished job: cleanPodPolicy, then TTL."""
        policy = self.job.spec.run_policy.clean_pod_policy
        for pod in self.pods:
            if policy == "All" or (policy == "Running" and pod.active):
                self.delete_pod(pod)
        ttl = self.job.spec.run_policy.ttl_seconds_after_finished
        done = self.status.completion_time
        if ttl is not None and done is not None:
            expires = done + timedelta(seconds=ttl)
            if self.now >= expires:
                self.plan.delete_job = True
                for pod in self.pods:
                    self.delete_pod(pod)
                for name in self.services or ():
                    self.delete_service(name)
            else:
                self.requeue(expires)

    def suspend(self) -> None:
        for pod in self.pods:
            self.delete_pod(pod)
        for name in self.services or ():
            self.delete_service(name)
        for rstatus in self.status.replica_statuses.values():
            rstatus.active = 0
        message = f"TFJob {self.name} is suspended."
        if self.status.is_true(c.COND_RUNNING):
            self.condition(c.COND_RUNNING, "False", c.REASON_SUSPENDED, message, event=None)
        if not self.status.is_true(c.COND_SUSPENDED):
            self.condition(c.COND_SUSPENDED, "True", c.REASON_SUSPENDED, message)

    def run_active(self) -> None:
        slots: dict[tuple[str, int], ObservedPod] = {}
        for pod in self.pods:
            spec = self.specs.get(pod.replica_type)
            if spec is None or pod.index >= spec.replicas or (pod.replica_type, pod.index) in slots:
                self.delete_pod(pod)  # scaled down, or not ours to keep
                continue
            slots[(pod.replica_type, pod.index)] = pod

        counts: dict[str, ReplicaStatus] = {t: ReplicaStatus() for t in self.job.replica_types()}
        missing: list[tuple[str, int]] = []
        retry: list[ObservedPod] = []
        failed: list[ObservedPod] = []
        for rtype in self.job.replica_types():
            spec = self.specs[rtype]
            for index in range(spec.replicas):
                found = slots.get((rtype, index))
                if found is None:
                    missing.append((rtype, index))
                    continue
                pod = found
                if pod.deleting:
                    continue
                if pod.phase == "Running":
                    counts[rtype].active += 1
                elif pod.phase == "Succeeded":
                    counts[rtype].succeeded += 1
                elif pod.phase == "Failed":
                    counts[rtype].failed += 1
                    if self.retryable(spec.restart_policy, pod):
                        retry.append(pod)
                    elif not (self.job.spec.enable_dynamic_worker and rtype == "Worker"):
                        failed.append(pod)
        self.status.replica_statuses = {t: s for t, s in counts.items()}

        new_recreations = [p for p in retry if self.count_recreation(p)]
        for pod in new_recreations:
            self.event(
                "Normal",
                c.REASON_EXITED_WITH_CODE,
                f"Pod: {self.ns}.{pod.name} exited with code {pod.exit_code}",
            )
        for pod in failed:
            self.event(
                "Normal",
                c.REASON_EXITED_WITH_CODE,
                f"Pod: {self.ns}.{pod.name} exited with code {pod.exit_code}",
            )

        failure = self.failure_message(failed, retry)
        if failure is not None:
            self.fail(failure)
            return
        if self.succeeded(counts, slots):
            self.succeed(counts)
            return

        if retry:
            first = retry[0]
            n = sum(1 for p in retry if p.replica_type == first.replica_type)
            self.condition(
                c.COND_RESTARTING,
                "True",
                c.REASON_RESTARTING,
                f"TFJob {self.name} is restarting because {n} {first.replica_type} replica(s) "
                f"failed ({_detail(first)}).",
                event="Warning",
            )
            for pod in retry:
                self.delete_pod(pod, with_service=False)
        elif looping := [p for p in self.waiting() if p.crash_looping]:
            first = looping[0]
            n = sum(1 for p in looping if p.replica_type == first.replica_type)
            self.condition(
                c.COND_RESTARTING,
                "True",
                c.REASON_RESTARTING,
                f"TFJob {self.name} is restarting because {n} {first.replica_type} replica(s) "
                f"restarted in place ({_detail(first)}, restart count {first.restart_count}).",
                event="Warning",
            )
        elif stuck := self.waiting():
            first = stuck[0]
            self.condition(
                c.COND_RUNNING,
                "False",
                first.waiting_reason or c.REASON_RUNNING,
                f"TFJob {self.ns}/{self.name} is not running: {_waiting(first)}.",
                event="Warning",
            )
        elif self.is_running(counts):
            self.condition(
                c.COND_RUNNING, "True", c.REASON_RUNNING, f"TFJob {self.ns}/{self.name} is running."
            )
        self.create(missing)

    def waiting(self) -> list[ObservedPod]:
        """Live pods of this job whose container waits for a reason the kubelet reported."""
        return [
            p for p in self.pods if p.active and p.waiting_reason and p.replica_type in self.specs
        ]

    def retryable(self, policy: str, pod: ObservedPod) -> bool:
        if policy in ("OnFailure", "Always"):
            return True
        if policy == "ExitCode":
            return pod.exit_code is None or pod.exit_code >= 128
        return False

    def count_recreation(self, pod: ObservedPod) -> bool:
        """Record one recreation of this pod's slot, once per pod uid; True if new."""
        entry = self.status.recreations.get(pod.name)
        if entry is not None and pod.uid and entry.last_pod_uid == pod.uid:
            return False
        entry = entry or Recreation()
        self.status.recreations[pod.name] = Recreation(
            count=entry.count + 1,
            lastPodUID=pod.uid,
            last_exit_code=pod.exit_code,
            last_reason=pod.reason,
        )
        return True

    def failure_message(self, failed: list[ObservedPod], retry: list[ObservedPod]) -> str | None:
        """Why the job fails now (Never/ExitCode failures, backoff, deadline), or None."""
        if failed:
            first = failed[0]
            n = sum(1 for p in failed if p.replica_type == first.replica_type)
            return (
                f"TFJob {self.ns}/{self.name} has failed because {n} {first.replica_type} "
                f"replica(s) failed ({_detail(first)})."
            )
        limit = self.job.spec.run_policy.backoff_limit
        if limit is not None:
            restarts = sum(
                p.restart_count
                for p in self.pods
                if p.active
                and p.replica_type in self.specs
                and self.specs[p.replica_type].restart_policy in _COUNTED_POLICIES
            )
            total = restarts + sum(r.count for r in self.status.recreations.values())
            if (total > 0) if limit == 0 else (total >= limit):
                culprit: ObservedPod | None = retry[0] if retry else self.last_restarted()
                detail = f" (last failure: {_detail(culprit)})" if culprit else ""
                return (
                    f"Job {self.name} has failed because it has reached the specified backoff "
                    f"limit{detail}"
                )
        deadline = self.job.spec.run_policy.active_deadline_seconds
        if deadline is not None and self.status.start_time is not None:
            ends = self.status.start_time + timedelta(seconds=deadline)
            if self.now >= ends:
                stuck = self.waiting()
                detail = f" ({_waiting(stuck[0])})" if stuck else ""
                return (
                    f"Job {self.name} has failed because it was active longer than specified "
                    f"deadline{detail}"
                )
            self.requeue(ends)
        return None

    def last_restarted(self) -> ObservedPod | None:
        restarted = [p for p in self.pods if p.active and p.restart_count > 0]
        return max(restarted, key=lambda p: p.restart_count) if restarted else None

    def succeeded(self, counts: dict[str, ReplicaStatus], slots: dict) -> bool:
        if self.job.has_chief():
            return all(
                counts[t].succeeded >= self.specs[t].replicas
                for t in self.job.replica_types()
                if t in c.CHIEF_TYPES
            )
        worker = self.specs.get("Worker")
        if worker is None:
            return False
        if counts["Worker"].succeeded >= worker.replicas:
            return True
        if self.job.spec.success_policy == "AllWorkers":
            return False
        zero = slots.get(("Worker", 0))
        return (
            zero is not None
            and not zero.deleting
            and zero.phase == "Succeeded"
            and zero.exit_code in (0, None)
        )

    def is_running(self, counts: dict[str, ReplicaStatus]) -> bool:
        if self.job.has_chief():
            return any(counts[t].active > 0 for t in counts if t in c.CHIEF_TYPES)
        return "Worker" in counts and counts["Worker"].active > 0

    def fail(self, message: str) -> None:
        self.status.completion_time = self.status.completion_time or self.now
        self.condition(c.COND_FAILED, "True", c.REASON_FAILED, message, event="Warning")
        self.cleanup()

    def succeed(self, counts: dict[str, ReplicaStatus]) -> None:
        self.status.completion_time = self.status.completion_time or self.now
        for rstatus in counts.values():
            rstatus.succeeded += rstatus.active
            rstatus.active = 0
        self.condition(
            c.COND_SUCCEEDED,
            "True",
            c.REASON_SUCCEEDED,
            f"TFJob {self.ns}/{self.name} successfully completed.",
        )
        self.cleanup()

    def create(self, missing: list[tuple[str, int]]) -> None:
        warned: set[str] = set()
        for rtype, index in missing:
            self.plan.create_pods.append(desired_pod(self.job, rtype, index, self.options))
            template_spec = self.specs[rtype].template.get("spec") or {}  # type: ignore[index]
            if "restartPolicy" in template_spec and rtype not in warned:
                warned.add(rtype)
                self.event(
                    "Warning",
                    c.REASON_TEMPLATE_RESTART_POLICY,
                    f"Restart policy in pod template of {rtype} will be overwritten by the "
                    f"restart policy in the replica spec ({self.specs[rtype].restart_policy}).",  # type: ignore[index]
                )
        if self.services is None:
            return
        for rtype in self.job.replica_types():
            for index in range(self.specs[rtype].replicas):
                if replica_name(self.name, rtype, index) not in self.services:
                    self.plan.create_services.append(desired_service(self.job, rtype, index))
        wanted = {
            replica_name(self.name, t, i)
            for t in self.job.replica_types()
            for i in range(self.specs[t].replicas)
        }
        for name in self.services:
            if name not in wanted:
                self.delete_service(name)
