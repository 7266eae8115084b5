"""The job lifecycle as one pure function: (job, observed pods, now) -> Plan.

Over 400 lines: Kubeflow's lifecycle is one ordered decision (suspend, deadline, backoff,
restarts, node loss, gangs, conditions), read top to bottom in one place.

    plan_job(job: TFJob, pods: Sequence[ObservedPod], now: datetime, *,
             services: Collection[str] | None = None,
             options: BuildOptions | None = None) -> Plan

Level-triggered: the plan depends only on its inputs (the spec, the status last written, the
pods that exist now, the names of the services that exist now, the time), so planning again
after a crash or a missed event gives the same plan. `services=None` means "services are not
managed" (the local runner): no service creations or deletions are planned. What a Plan holds
and how to carry it out: `taas_operator.planner.plan`.

These are the rules Kubeflow's common job engine applies to every job kind. What only a TFJob
knows (which replicas decide running and success, the master role, a dynamic worker's failure,
the cluster spec) comes from `taas_operator.tfjob`.

Rules (Kubeflow's unless marked TaaS):
- Created condition on first sight; startTime when first not suspended.
- success and running: `taas_operator.tfjob.rules`.
- a Failed pod: Never -> the job fails; OnFailure/Always -> the pod is deleted and recreated
  (Restarting); ExitCode -> exit code >= 128 (or unknown) recreates, 1-127 fails the job
  (unless `tfjob.rules.failure_fails_job` says the type's failures do not count).
- backoffLimit: restarts of live pods under OnFailure/Always/ExitCode plus (TaaS) every
  recreation recorded in status.recreations; reaching the limit (any restart when it is 0) fails
  the job, and the recreation that reached it is not done.
- activeDeadlineSeconds: fails the job at startTime + the deadline; `requeue_at` says when.
- on Succeeded/Failed: completionTime; cleanPodPolicy Running deletes pending and running pods
  and their services, All deletes all, None none; ttlSecondsAfterFinished deletes the job after
  completionTime + TTL. Conditions and replica counts then stay as they were (terminal).
  TaaS: on failure, a Running pod restarted in place whose last run failed counts as failed.
- suspend: delete every pod and service, active counts 0, Running False and Suspended True
  (TFJobSuspended). Resume: Suspended False (TFJobResumed), startTime reset, pods recreated.
- scaling: pods at an index >= replicas (and their services) are deleted, missing ones created.
  TaaS: a change of the Worker count (the scale subresource) is one Normal event, TFJobScaled
  (`planner.scaling`: status.workerReplicas, replicaStatuses.Worker.selector, every pass).
  TaaS: in batches (`planner.batches`): a pass builds at most a batch of pods and of services,
  in index order, and asks to run again at once (`requeue_at`) for the rest.
- TaaS: with gang scheduling on, pods the scheduler reports Unschedulable set Running False
  (reason WaitingForGang: "waiting for N pods to be scheduled together: <its message>";
  `planner.gang`), one Warning event.
- TaaS: failure and restart messages name the pod, container and exit code.
- TaaS: a job that restarts whole (`tfjob.rules.restarts_whole`: the annotation
  `taas.dev/restart-scope: job`): when a replica is to be recreated (a retryable
  exit, its node lost), every other live Chief/Master/Worker pod is deleted too and made again
  once gone; one recreation is counted (the first replica lost in the pass), a trainer that
  failed in the same pass (its collective lost a peer) restarts with the rest rather than
  failing the job, and Restarting names the lost replica and says the whole job restarts.
- TaaS: a replica the kubelet restarts in place (OnFailure/Always: CrashLoopBackOff, or waiting
  again after a restart) sets Restarting, as a recreated one does; a replica that cannot start
  (ErrImageNeverPull, ImagePullBackOff, CreateContainerConfigError...) sets Running False with
  the kubelet's reason and message. Running comes back once every replica runs; backoffLimit
  and activeDeadlineSeconds end a job that never gets there (the deadline message names the
  waiting replica).
- TaaS: a pod evicted from a node that stopped responding (condition DisruptionTarget, reason
  DeletionByTaintManager: the node lifecycle controller found the node NotReady/unreachable
  past --node-monitor-grace-period and the pod's toleration of that taint ran out) stays
  Terminating forever, as no kubelet confirms it stopped. Once its grace period has passed too
  (deletionTimestamp), it is force-deleted; with OnFailure/ExitCode/Always its replica is then
  recreated (a recreation counted with reason NodeLost; Restarting names the node), with Never
  the job fails naming the node. Why this is safe: `failures.lost_detail`. A pod of a node
  deleted from the cluster (DisruptionTarget, reason DeletionByPodGC: the pod garbage
  collector marks it Failed and deletes it) is lost the same way, named as such, and never
  counted as a failure of its container; once it is gone (the watch remembers it,
  `ObservedPod.gone`) its replica is made again, or with Never the job has failed.
- TaaS: a pod evicted from a working node (`kubectl drain` or another client of the Eviction
  API, the scheduler's preemption, its kubelet under pressure: condition DisruptionTarget with
  any other reason) is stopped by its kubelet (SIGTERM: a TaaS trainer saves a checkpoint) and
  made again once gone, as any missing replica, without counting a failure; Restarting says
  why (the pod, its node, the condition's reason and message), one Warning event.
- TaaS: replicas the scheduler cannot place (PodScheduled False, reason Unschedulable) set
  Running False with reason Unschedulable and a message counting them per type with the
  scheduler's words ("3 of 8 Worker pods unschedulable: 0/20 nodes are available: ..."), kept
  current as the count changes; Running comes back once every replica runs.
- TaaS: a pod template the pod builder cannot read (a type the CRD's schema refuses, e.g. `env`
  as a map; a job stored before that schema existed can hold one) fails the job at once
  (`fail_invalid_spec`: reason InvalidTFJobSpec, one Warning event naming the replica and the
  field), so `plan_job` returns a plan, never raises, whatever the template holds.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from taas_operator.api import FieldError, template_errors
from taas_operator.api import constants as c
from taas_operator.api.constants import REASON_NODE_LOST, ReplicaType
from taas_operator.api.models import ReplicaSpec, ReplicaStatus, TFJob
from taas_operator.planner import kueue
from taas_operator.planner.batches import MAX_BATCH, pod_batch
from taas_operator.planner.conditions import fail_invalid_spec, set_condition
from taas_operator.planner.failures import (
    count_recreation,
    detail,
    evicted_why,
    failure_message,
    lost_detail,
    retryable,
    unschedulable_detail,
    waiting_detail,
    waiting_pods,
)
from taas_operator.planner.gang import gang_waiting
from taas_operator.planner.objects import BuildOptions, desired_pod, desired_service
from taas_operator.planner.observed import ObservedPod
from taas_operator.planner.plan import Event, EventType, Plan, skip_reason, status_changed
from taas_operator.planner.scaling import note_worker_scale
from taas_operator.tfjob import rules
from taas_operator.tfjob.cluster_spec import ClusterEnv, replica_name


def plan_job(
    job: TFJob,
    pods: Sequence[ObservedPod],
    now: datetime,
    *,
    services: Collection[str] | None = None,
    options: BuildOptions | None = None,
) -> Plan:
    """Compute the plan for one job; see the module docstring for the rules."""
    skipped = skip_reason(job.spec.run_policy.managed_by, job.metadata.deletion_timestamp)
    if skipped:
        return Plan(status=job.status, skipped=skipped)
    return _Pass(job, pods, _utc(now), services, options or BuildOptions()).run()


def _utc(now: datetime) -> datetime:
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return now.astimezone(UTC).replace(microsecond=0)


@dataclass
class _Replicas:
    """A running job's replicas, sorted by what its pods say (`_Pass.sort_pods`)."""

    counts: dict[str, ReplicaStatus]
    missing: list[tuple[ReplicaType, int]] = field(default_factory=list)
    retry: list[ObservedPod] = field(default_factory=list)  # failed, to be made again
    failed: list[ObservedPod] = field(default_factory=list)  # failed for good
    retry_lost: list[ObservedPod] = field(default_factory=list)  # evicted from a lost node
    failed_lost: list[ObservedPod] = field(default_factory=list)
    evicted: list[ObservedPod] = field(default_factory=list)  # from a working node (drain...)


class _Pass:
    """One planning pass; holds the working status and the plan being built."""

    def __init__(
        self,
        job: TFJob,
        pods: Sequence[ObservedPod],
        now: datetime,
        services: Collection[str] | None,
        options: BuildOptions,
    ) -> None:
        self.job, self.now, self.options = job, now, options
        # names in their order, looked up in constant time (a job of 1,100 replicas asks 1,100)
        self.services = dict.fromkeys(services) if services is not None else None
        self.pods = list(pods)
        self.status = job.status.model_copy(deep=True)
        self.plan = Plan(status=self.status)
        # names already in the plan's lists, looked up in constant time (suspending or cleaning
        # up a job of 5,000 replicas puts 10,000 names there)
        self.planned: set[tuple[str, str]] = set()
        self.name, self.ns = job.name, job.namespace
        self.specs = job.spec.tf_replica_specs

    # -- helpers --------------------------------------------------------------------------------
    def event(self, type_: EventType, reason: str, message: str) -> None:
        self.plan.events.append(Event(type=type_, reason=reason, message=message))

    def condition(
        self,
        type_: str,
        value: Literal["True", "False"],
        reason: str,
        message: str,
        event: EventType | None = "Normal",
        refresh: bool = False,
    ) -> bool:
        changed = set_condition(self.status, type_, value, reason, message, self.now, refresh)
        if changed and event:
            self.event(event, reason, message)
        return changed

    def delete_pod(self, pod: ObservedPod, with_service: bool = True) -> None:
        if not pod.deleting and self.first("delete_pods", pod.name):
            self.plan.delete_pods.append(pod.name)
        if with_service:
            self.delete_service(pod.name)

    def delete_service(self, name: str) -> None:
        wanted = self.services is not None and name in self.services
        if wanted and self.first("delete_services", name):
            self.plan.delete_services.append(name)

    def first(self, plan_list: str, name: str) -> bool:
        """Whether `name` is not yet in the plan's list `plan_list` (and now counted there)."""
        key = (plan_list, name)
        if key in self.planned:
            return False
        self.planned.add(key)
        return True

    def requeue(self, at: datetime) -> None:
        if self.plan.requeue_at is None or at < self.plan.requeue_at:
            self.plan.requeue_at = at

    def finish(self) -> Plan:
        scaled = note_worker_scale(self.job, self.status)
        if scaled is not None:
            self.plan.events.append(scaled)
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
        problems = [str(e) for t in self.job.replica_types() for e in self.template_problems(t)]
        if problems:
            self.fail_invalid("; ".join(problems))
            return self.finish()
        if self.job.spec.run_policy.suspend:
            self.suspend()
            return self.finish()
        if self.status.is_true(c.COND_SUSPENDED):
            self.condition(
                c.COND_SUSPENDED, "False", c.REASON_RESUMED, f"TFJob {self.name} is resumed."
            )
            # Strictly later than the last run's: a Kueue pod group is named after it.
            last = self.status.start_time
            self.status.start_time = (
                self.now if last is None or self.now > last else last + timedelta(seconds=1)
            )
        if self.status.start_time is None:
            self.status.start_time = self.now
        self.run_active()
        return self.finish()

    def close_groups(self) -> None:
        """The run is over: tell Kueue its pod group will not retry (`planner.kueue`)."""
        for name in kueue.to_close(self.pods):
            if self.first("close_pods", name):
                self.plan.close_pods.append(name)

    def release(self, pod: ObservedPod) -> None:
        """Remove Kueue's finalizer from an ended pod TaaS replaces (`planner.kueue`)."""
        if pod.kueue_finalizer and self.first("release_pods", pod.name):
            self.plan.release_pods.append(pod.name)

    def cleanup(self) -> None:
        """Finished job: cleanPodPolicy, then TTL (and Kueue's pod group closed)."""
        self.close_groups()
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
        self.close_groups()
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
        """A job that runs: its pods sorted by what happened to them, the failures counted
        (which may end the job), the Restarting or Running condition said, the missing pods
        made."""
        group = kueue.pod_group(self.job, self.status.start_time, self.options.kueue_pod_groups)
        slots = self.slot_pods()
        replicas = self.sort_pods(slots)
        if self.count_failures(replicas, slots):
            return
        if not self.say_restarting(replicas, slots):
            self.say_running(replicas, group)
        self.create(replicas.missing, group)

    def slot_pods(self) -> dict[tuple[ReplicaType, int], ObservedPod]:
        """Each pod in its replica's slot; a pod past the replicas, or a second one for a slot,
        is deleted."""
        slots: dict[tuple[ReplicaType, int], ObservedPod] = {}
        for pod in self.pods:
            spec = self.specs.get(pod.replica_type)
            if spec is None or pod.index >= spec.replicas or (pod.replica_type, pod.index) in slots:
                self.delete_pod(pod)  # scaled down, or not ours to keep
                continue
            slots[(pod.replica_type, pod.index)] = pod
        return slots

    def sort_pods(self, slots: dict[tuple[ReplicaType, int], ObservedPod]) -> _Replicas:
        """Every replica slot by what its pod says (the counts written to the status)."""
        replicas = _Replicas(counts={t: ReplicaStatus() for t in self.job.replica_types()})
        for rtype in self.job.replica_types():
            spec = self.specs[rtype]
            for index in range(spec.replicas):
                pod = slots.get((rtype, index))
                if pod is None:
                    replicas.missing.append((rtype, index))
                elif pod.deleting or pod.node_deleted:
                    self.sort_leaving(replicas, pod, spec)
                elif pod.phase == "Running":
                    replicas.counts[rtype].active += 1
                elif pod.phase == "Succeeded":
                    replicas.counts[rtype].succeeded += 1
                elif pod.phase == "Failed":
                    replicas.counts[rtype].failed += 1
                    if retryable(spec.restart_policy, pod):
                        replicas.retry.append(pod)
                    elif rules.failure_fails_job(self.job, rtype):
                        replicas.failed.append(pod)
        self.status.replica_statuses = {t: s for t, s in replicas.counts.items()}
        return replicas

    def sort_leaving(self, replicas: _Replicas, pod: ObservedPod, spec: ReplicaSpec) -> None:
        """A pod on its way out: lost with its node, stopped, or evicted."""
        if self.lost_now(pod):
            (
                replicas.retry_lost if retryable(spec.restart_policy, pod) else replicas.failed_lost
            ).append(pod)
            self.release(pod)
            if pod.gone:  # its name is free: the replacement now
                replicas.missing.append((pod.replica_type, pod.index))
        elif kueue.ended(pod):  # stopped (by Kueue, or by TaaS for a restart)
            self.release(pod)
        if pod.evicted:
            replicas.evicted.append(pod)

    def count_failures(
        self, replicas: _Replicas, slots: dict[tuple[ReplicaType, int], ObservedPod]
    ) -> bool:
        """Recreations counted and their events; True when the pass ends the job (failed: a
        replica lost or failed for good, the backoff limit, the deadline; or succeeded)."""
        counted, counted_lost, failed = replicas.retry, replicas.retry_lost, replicas.failed
        if rules.restarts_whole(self.job) and (replicas.retry or replicas.retry_lost):
            # Restarting whole, the first replica lost in this pass is the cause and counted
            # once (one lost with its node first); trainers failing in the same pass (a
            # collective that lost its peer: often exit 1) restart with every peer, uncounted,
            # instead of failing the job.
            counted_lost = replicas.retry_lost[:1]
            counted = [] if replicas.retry_lost else replicas.retry[:1]
            failed = [p for p in failed if p.replica_type not in rules.TRAINER_TYPES]
        new_recreations = [p for p in counted if count_recreation(self.status, p)]
        for pod in [*new_recreations, *failed]:
            self.event(
                "Normal",
                c.REASON_EXITED_WITH_CODE,
                f"Pod: {self.ns}.{pod.name} exited with code {pod.exit_code}",
            )

        for pod in counted_lost:
            count_recreation(self.status, pod.model_copy(update={"reason": REASON_NODE_LOST}))
        lost = [
            p for p in replicas.failed_lost if rules.failure_fails_job(self.job, p.replica_type)
        ]
        if lost:
            first = lost[0]
            n = sum(1 for p in lost if p.replica_type == first.replica_type)
            self.fail(
                f"TFJob {self.ns}/{self.name} has failed because {n} {first.replica_type} "
                f"replica(s) were lost with their node ({lost_detail(first)})."
            )
            return True
        failure = failure_message(
            self.job, self.status, self.pods, failed, replicas.retry, self.now
        )
        if failure.message is not None:
            self.fail(failure.message)
            return True
        if failure.deadline is not None:
            self.requeue(failure.deadline)
        zero = slots.get(("Worker", 0))
        zero_succeeded = (
            zero is not None
            and not zero.deleting
            and zero.phase == "Succeeded"
            and zero.exit_code in (0, None)
        )
        if rules.has_succeeded(self.job, replicas.counts, zero_succeeded):
            self.succeed(replicas.counts)
            return True
        return False

    def restarting(self, message: str) -> None:
        self.condition(c.COND_RESTARTING, "True", c.REASON_RESTARTING, message, event="Warning")

    def say_restarting(
        self, replicas: _Replicas, slots: dict[tuple[ReplicaType, int], ObservedPod]
    ) -> bool:
        """Restarting, when replicas are made again (failed, lost with their node, evicted, or
        restarted in place by their kubelet), the failed ones deleted; False when none is."""
        retry, retry_lost, evicted = replicas.retry, replicas.retry_lost, replicas.evicted
        if retry:
            first = retry[0]
            n = sum(1 for p in retry if p.replica_type == first.replica_type)
            whole = self.restart_whole(slots, retry)
            # Peers that stop with an evicted replica (its collective gone) fail after it: the
            # eviction is the cause to name.
            why = evicted_why(evicted) or (
                f"{n} {first.replica_type} replica(s) failed ({detail(first)})."
            )
            self.restarting(f"TFJob {self.name} is restarting{whole} because {why}")
            for pod in retry:
                self.delete_pod(pod, with_service=False)
                self.release(pod)
        elif retry_lost:
            first = retry_lost[0]
            n = sum(1 for p in retry_lost if p.replica_type == first.replica_type)
            self.restarting(
                f"TFJob {self.name} is restarting{self.restart_whole(slots, retry_lost)} because "
                f"{n} {first.replica_type} replica(s) were lost with their node "
                f"({lost_detail(first)})."
            )
        elif evicted:
            self.restarting(f"TFJob {self.name} is restarting because {evicted_why(evicted)}")
        elif looping := [p for p in waiting_pods(self.job, self.pods) if p.crash_looping]:
            first = looping[0]
            n = sum(1 for p in looping if p.replica_type == first.replica_type)
            self.restarting(
                f"TFJob {self.name} is restarting because {n} {first.replica_type} replica(s) "
                f"restarted in place ({detail(first)}, restart count {first.restart_count})."
            )
        else:
            return False
        return True

    def say_running(self, replicas: _Replicas, group: kueue.KueueGroup | None) -> None:
        """Running False with the reason the job does not run (Kueue, its gang, replicas the
        scheduler cannot place or that cannot start), else Running True once it runs."""
        counts, missing = replicas.counts, replicas.missing
        if (stopped := kueue.stopped_by_kueue(self.job, self.pods)) is not None:
            self.condition(
                c.COND_RUNNING, "False", c.REASON_EVICTED_BY_KUEUE, stopped, event="Warning"
            )
        elif (
            queued := kueue.waiting_for_admission(self.job, self.pods, group, bool(missing))
        ) is not None:
            self.condition(c.COND_RUNNING, "False", c.REASON_WAITING_FOR_ADMISSION, queued)
        elif (
            admitted := kueue.admitted(self.job, self.pods, group, self.running_reason())
        ) is not None and not rules.is_running(self.job, counts):
            # (a pass that first sees the admission with every pod Running already says Running)
            self.condition(c.COND_RUNNING, "False", c.REASON_ADMITTED_BY_KUEUE, admitted)
        # a gang waits as a whole: its message says so (else each unplaced pod is counted)
        elif (gang := gang_waiting(self.job, self.pods, self.options)) is not None:
            self.condition(
                c.COND_RUNNING,
                "False",
                c.REASON_WAITING_FOR_GANG,
                f"TFJob {self.ns}/{self.name} is {gang}.",
                event="Warning",
            )
        elif unplaced := unschedulable_detail(self.job, self.pods):
            self.condition(
                c.COND_RUNNING,
                "False",
                c.REASON_UNSCHEDULABLE,
                f"TFJob {self.ns}/{self.name} is not running: {unplaced}",
                event="Warning",
                refresh=True,
            )
        elif stuck := waiting_pods(self.job, self.pods):
            first = stuck[0]
            self.condition(
                c.COND_RUNNING,
                "False",
                first.waiting_reason or c.REASON_RUNNING,
                f"TFJob {self.ns}/{self.name} is not running: {waiting_detail(first)}.",
                event="Warning",
            )
        elif rules.is_running(self.job, counts):
            self.condition(
                c.COND_RUNNING, "True", c.REASON_RUNNING, f"TFJob {self.ns}/{self.name} is running."
            )

    def restart_whole(
        self, slots: dict[tuple[ReplicaType, int], ObservedPod], lost: list[ObservedPod]
    ) -> str:
        """TaaS: for a job that restarts whole, delete every other live trainer pod (each is
        made again once gone) and return the words for the Restarting message; else ""."""
        if not rules.restarts_whole(self.job):
            return ""
        causes = {pod.name for pod in lost}
        peers = [
            pod
            for pod in slots.values()
            if pod.replica_type in rules.TRAINER_TYPES
            and pod.name not in causes
            and not pod.deleting
            and pod.phase != "Succeeded"
        ]
        for pod in peers:
            self.delete_pod(pod, with_service=False)
            self.release(pod)
        trainers = sum(s.replicas for t, s in self.specs.items() if t in rules.TRAINER_TYPES)
        return (
            f" all {trainers} of its Chief/Master/Worker replicas (annotation "
            f"{c.RESTART_SCOPE_ANNOTATION}: job)"
        )

    def template_bytes(self) -> int:
        """The largest pod template of the job as JSON: what each pod copies besides its env."""
        return max(len(json.dumps(s.template, default=str)) for s in self.specs.values())

    def running_reason(self) -> str | None:
        cond = self.status.condition(c.COND_RUNNING)
        return cond.reason if cond is not None else None

    def lost_now(self, pod: ObservedPod) -> bool:
        """TaaS: whether the pod's replica counts as lost with its node now. A pod of a
        deleted node: at once (the pod garbage collector deletes it itself). A pod evicted
        from a node that stopped responding: once its grace period has passed, when it is
        force-deleted (its slot is then free for a replacement); before that, a pass is
        requeued for when the grace period ends. See `lost_detail` for why this is safe."""
        if not pod.lost_with_node:
            return False
        if pod.node_deleted or pod.gone:
            return True
        if pod.deletion_deadline is not None and self.now < pod.deletion_deadline:
            self.requeue(pod.deletion_deadline)
            return False
        if self.first("force_delete_pods", pod.name):
            self.plan.force_delete_pods.append(pod.name)
        return True

    def template_problems(self, replica_type: ReplicaType) -> list[FieldError]:
        """What in this replica's pod template the pod builder cannot read (wrong types)."""
        return template_errors(replica_type, self.specs[replica_type].template)

    def fail_invalid(self, problems: str) -> None:
        message = fail_invalid_spec(self.status, self.ns, self.name, problems, self.now)
        if message:
            self.event("Warning", c.REASON_INVALID_SPEC, message)
        self.cleanup()

    def fail(self, message: str) -> None:
        self.status.completion_time = self.status.completion_time or self.now
        self.condition(c.COND_FAILED, "True", c.REASON_FAILED, message, event="Warning")
        self.cleanup()
        # A pod that restarts in place (OnFailure/Always) stays Running while it crash-loops;
        # when the job fails, one whose last run failed counts as failed, not active, so the
        # final status shows what ended the job. Pods merely stopped keep Kubeflow's counts.
        for pod in self.pods:
            rstatus = self.status.replica_statuses.get(pod.replica_type)
            spec = self.specs.get(pod.replica_type)
            counted = spec is not None and pod.index < spec.replicas and not pod.deleting
            crashed = pod.phase == "Running" and pod.restart_count > 0 and bool(pod.exit_code)
            if counted and crashed and rstatus is not None and rstatus.active > 0:
                rstatus.active -= 1
                rstatus.failed += 1

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

    def create(
        self, missing: list[tuple[ReplicaType, int]], group: kueue.KueueGroup | None
    ) -> None:
        warned: set[str] = set()
        cluster = ClusterEnv(self.job, self.options.host_fn(self.job)) if missing else None
        if cluster is not None:
            batch = pod_batch(cluster.pod_bytes + self.template_bytes())
            if len(missing) > batch:
                missing = missing[:batch]
                self.requeue(self.now)
        for rtype, index in missing:
            pod = desired_pod(self.job, rtype, index, self.options, cluster)
            if group is not None:
                kueue.join(pod, group)
            self.plan.create_pods.append(pod)
            template_spec = self.specs[rtype].template.get("spec") or {}
            if "restartPolicy" in template_spec and rtype not in warned:
                warned.add(rtype)
                self.event(
                    "Warning",
                    c.REASON_TEMPLATE_RESTART_POLICY,
                    f"Restart policy in pod template of {rtype} will be overwritten by the "
                    f"restart policy in the replica spec ({self.specs[rtype].restart_policy}).",
                )
        if self.services is None:
            return
        for rtype in self.job.replica_types():
            for index in range(self.specs[rtype].replicas):
                if replica_name(self.name, rtype, index) not in self.services:
                    if len(self.plan.create_services) == MAX_BATCH:
                        self.requeue(self.now)
                        break
                    self.plan.create_services.append(desired_service(self.job, rtype, index))
        wanted = {
            replica_name(self.name, t, i)
            for t in self.job.replica_types()
            for i in range(self.specs[t].replicas)
        }
        for name in self.services:
            if name not in wanted:
                self.delete_service(name)
