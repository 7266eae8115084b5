"""When a failed pod is recreated and when the job fails: restartPolicy, backoffLimit, deadline.

    retryable(restart_policy, pod) -> bool
    count_recreation(status, pod) -> bool              # records it in status.recreations
    failure_message(job, status, pods, failed, retry, now) -> JobFailure
    detail(pod) -> str                                 # "pod p, container c, exit code n"
    waiting_pods(job, pods) -> list[ObservedPod]       # live, waiting for a kubelet reason
    waiting_detail(pod) -> str                         # "pod p (Worker 0), container c is ..."
    unschedulable_detail(job, pods) -> str | None      # "3 of 8 Worker pods unschedulable: ..."
    lost_detail(pod) -> str             # "pod p (Worker 1) on node n, which was deleted ..."
    evicted_why(pods) -> str            # "1 Worker replica(s) were evicted (pod p ..."

Pure; the lifecycle pass (`taas_operator.planner.lifecycle`) calls them with the pods of the
current slots (`failed`: ended and not to be retried; `retry`: to be deleted and recreated).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from taas_operator.api.models import Recreation, TFJob, TFJobStatus
from taas_operator.planner.observed import ObservedPod

#: Restart policies whose container restarts count against backoffLimit.
_COUNTED_POLICIES = ("OnFailure", "Always", "ExitCode")


class JobFailure(NamedTuple):
    """Why the job fails now (None: it does not), and when the deadline will end it."""

    message: str | None
    deadline: datetime | None = None


def detail(pod: ObservedPod) -> str:
    """TaaS: which pod, container and exit code a failure came from."""
    code = "unknown" if pod.exit_code is None else str(pod.exit_code)
    reason = f", reason {pod.reason}" if pod.reason else ""
    return f"pod {pod.name}, container {pod.container}, exit code {code}{reason}"


def waiting_detail(pod: ObservedPod) -> str:
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


def waiting_pods(job: TFJob, pods: Sequence[ObservedPod]) -> list[ObservedPod]:
    """Live pods of this job whose container waits for a reason the kubelet reported."""
    specs = job.spec.tf_replica_specs
    return [p for p in pods if p.active and p.waiting_reason and p.replica_type in specs]


def unschedulable_detail(job: TFJob, pods: Sequence[ObservedPod]) -> str | None:
    """TaaS: how many live pods of each type the scheduler cannot place, and why in its words
    (the message of the first such pod), or None when it places them all."""
    specs = job.spec.tf_replica_specs
    stuck = [p for p in pods if p.active and p.unschedulable and p.replica_type in specs]
    if not stuck:
        return None
    counts = {t: sum(1 for p in stuck if p.replica_type == t) for t in job.replica_types()}
    parts = [f"{n} of {specs[t].replicas} {t} pods" for t, n in counts.items() if n]
    return f"{' and '.join(parts)} unschedulable: {stuck[0].unschedulable}"


def lost_detail(pod: ObservedPod) -> str:
    """TaaS: which replica was lost with which node.

    Why force-deleting such a pod is safe (two pods of one replica never run at once as far as
    the cluster can tell): Kubernetes itself judged the node lost, twice -- the node lifecycle
    controller after --node-monitor-grace-period without a heartbeat, then the taint-eviction
    controller after the pod's own toleration of the unreachable/not-ready taint -- and the
    pod's grace period has run out, by when a kubelet that could still act would have stopped
    it. The replacement is made only after the old pod object is gone (same name), and a pod
    being deleted is no ready endpoint of the replica's Service, so peers reach only the new
    one. What remains is a node cut off from the control plane but not from its peers that
    keeps running the old container: the case Kubernetes' own ReplicaSets accept, and why a
    user may prefer a longer toleration (tolerationSeconds on the template) to a faster one.
    A node deleted from the cluster is Kubernetes' own verdict: the pod garbage collector
    force-deletes its pods (after its 40 s quarantine) and the operator only replaces them.
    """
    node = pod.node or "unknown"
    why = (
        "which was deleted from the cluster"
        if pod.node_deleted
        else "evicted after the node stopped responding"
    )
    return f"pod {pod.name} ({pod.replica_type} {pod.index}) on node {node}, {why}"


def evicted_why(evicted: Sequence[ObservedPod]) -> str:
    """TaaS: how many replicas of the first one's type were evicted, which one from which node
    and why in Kubernetes' words; "" when none was."""
    if not evicted:
        return ""
    first = evicted[0]
    n = sum(1 for p in evicted if p.replica_type == first.replica_type)
    where = f"pod {first.name} ({first.replica_type} {first.index}) on node {first.node or '?'}"
    return (
        f"{n} {first.replica_type} replica(s) were evicted ({where}, {first.evicted}); each is "
        "made again once it has stopped."
    )


def retryable(restart_policy: str, pod: ObservedPod) -> bool:
    """OnFailure/Always: always; ExitCode: a signal or lost peer (>= 128, or unknown)."""
    if restart_policy in ("OnFailure", "Always"):
        return True
    if restart_policy == "ExitCode":
        return pod.exit_code is None or pod.exit_code >= 128
    return False


def count_recreation(status: TFJobStatus, pod: ObservedPod) -> bool:
    """Record one recreation of this pod's slot, once per pod uid; True if new."""
    entry = status.recreations.get(pod.name)
    if entry is not None and pod.uid and entry.last_pod_uid == pod.uid:
        return False
    entry = entry or Recreation()
    status.recreations[pod.name] = Recreation(
        count=entry.count + 1,
        lastPodUID=pod.uid,
        last_exit_code=pod.exit_code,
        last_reason=pod.reason,
    )
    return True


def failure_message(
    job: TFJob,
    status: TFJobStatus,
    pods: Sequence[ObservedPod],
    failed: Sequence[ObservedPod],
    retry: Sequence[ObservedPod],
    now: datetime,
) -> JobFailure:
    """Why the job fails now (Never/ExitCode failures, backoff, deadline), if it does."""
    name, specs = job.name, job.spec.tf_replica_specs
    if failed:
        first = failed[0]
        n = sum(1 for p in failed if p.replica_type == first.replica_type)
        return JobFailure(
            f"TFJob {job.namespace}/{name} has failed because {n} {first.replica_type} "
            f"replica(s) failed ({detail(first)})."
        )
    limit = job.spec.run_policy.backoff_limit
    if limit is not None:
        restarts = sum(
            p.restart_count
            for p in pods
            if p.active
            and p.replica_type in specs
            and specs[p.replica_type].restart_policy in _COUNTED_POLICIES
        )
        total = restarts + sum(r.count for r in status.recreations.values())
        if (total > 0) if limit == 0 else (total >= limit):
            culprit = retry[0] if retry else _last_restarted(pods)
            because = f" (last failure: {detail(culprit)})" if culprit else ""
            return JobFailure(
                f"Job {name} has failed because it has reached the specified backoff limit{because}"
            )
    deadline = job.spec.run_policy.active_deadline_seconds
    if deadline is not None and status.start_time is not None:
        ends = status.start_time + timedelta(seconds=deadline)
        if now >= ends:
            stuck = waiting_pods(job, pods)
            because = f" ({waiting_detail(stuck[0])})" if stuck else ""
            return JobFailure(
                f"Job {name} has failed because it was active longer than specified "
                f"deadline{because}"
            )
        return JobFailure(None, ends)
    return JobFailure(None)


def _last_restarted(pods: Sequence[ObservedPod]) -> ObservedPod | None:
    restarted = [p for p in pods if p.active and p.restart_count > 0]
    return max(restarted, key=lambda p: p.restart_count) if restarted else None
