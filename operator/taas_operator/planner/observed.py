"""What the planner needs to know about one existing pod of a job.

    ObservedPod(name, replica_type, index, phase, uid, exit_code, reason, restart_count, deleting,
                pod_ip, waiting_reason, waiting_message, termination_message, unschedulable,
                node, evicted_from_node, node_deleted, deletion_deadline, gone, kueue_group,
                kueue_finalizer, kueue_gated, kueue_stopped, kueue_closed)
    ObservedPod.lost_with_node -> bool      # its replica went with its node, it did not end
    ObservedPod.from_manifest(pod: Mapping) -> ObservedPod | None

The operator builds them from real pod objects with `from_manifest` (camelCase JSON, e.g. what
kopf hands over or `ApiClient().sanitize_for_serialization(pod)`); the local runner builds them
from its processes directly (phase Running while alive, Succeeded/Failed with the exit code when
it ended; `uid` must change whenever a replica's process is started again, e.g.
`f"{name}-{start_count}"`, because recreations are counted once per uid).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from taas_operator.api.constants import (
    DEFAULT_CONTAINER_NAME,
    KUEUE_FINALIZER,
    KUEUE_GATE,
    KUEUE_GROUP_LABEL,
    KUEUE_RETRIABLE_ANNOTATION,
    KUEUE_STOPPED_CONDITION,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    PROGRESS_PORT_NAME,
    ReplicaType,
)
from taas_operator.api.validation import normalize_replica_type

PodPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]
#: Waiting reasons of a container that is merely on its way (not a problem to report).
_STARTING = frozenset({"ContainerCreating", "PodInitializing"})
#: DisruptionTarget reasons of a pod lost with its node (`lost_with_node`), not evicted from it.
_LOST_WITH_NODE = frozenset({"DeletionByTaintManager", "DeletionByPodGC"})


class ObservedPod(BaseModel):
    """One pod (or local process) of a job as last seen."""

    name: str
    replica_type: ReplicaType
    index: int
    phase: PodPhase = "Pending"
    uid: str = ""
    #: Exit code of the tensorflow container: its current terminated state, else its last one.
    exit_code: int | None = None
    #: Why it ended: the container's terminated reason (OOMKilled, Error) or the pod's (Evicted).
    reason: str | None = None
    #: Restarts of all containers (init containers too), as the kubelet counts them.
    restart_count: int = 0
    #: The pod has a deletionTimestamp: it is going away and must not be counted or replaced yet.
    deleting: bool = False
    container: str = DEFAULT_CONTAINER_NAME
    #: status.podIP (None locally): where the operator reads the chief's training progress.
    pod_ip: str | None = None
    #: The tensorflow container's port named taas-progress, the one the operator declares on
    #: the chief for its progress and the only one it reads; None with hostNetwork (the pod's
    #: IP is then its node's, whose ports are not the job's).
    progress_port: int | None = None
    #: Why the tensorflow container (or an init container) waits instead of running, when that
    #: is a problem the kubelet reported: ErrImageNeverPull, ImagePullBackOff, CrashLoopBackOff,
    #: CreateContainerConfigError... None while it runs or is just being created.
    waiting_reason: str | None = None
    waiting_message: str | None = None
    #: The tensorflow container's termination message (its current terminated state): where a
    #: TaaS chief leaves its last progress report (`terminationMessagePath`, at most 4 KiB).
    termination_message: str | None = None
    #: The scheduler's message while it cannot place the pod (condition PodScheduled False,
    #: reason Unschedulable), e.g. "0/20 nodes are available: 20 Insufficient nvidia.com/gpu."
    unschedulable: str | None = None
    #: spec.nodeName: where the scheduler placed it (None while unscheduled, and locally).
    node: str | None = None
    #: Being deleted because its node stopped responding: the taint-eviction controller
    #: evicted it (condition DisruptionTarget, reason DeletionByTaintManager) after the node
    #: lifecycle controller tainted the node unreachable/not-ready. No kubelet may ever confirm
    #: that it stopped, so it can stay Terminating forever.
    evicted_from_node: bool = False
    #: Its node was deleted from the cluster: the pod garbage collector marked it Failed with
    #: condition DisruptionTarget, reason DeletionByPodGC ("PodGC: node no longer exists"), and
    #: deletes it at once. It only does so to pods that had not ended.
    node_deleted: bool = False
    #: Being deleted because something evicted it from a working node: `kubectl drain` or
    #: another client of the Eviction API (DisruptionTarget reason EvictionByEvictionAPI), the
    #: scheduler preempting it, its kubelet (node pressure): "<reason>: <message>" of the
    #: condition. Its kubelet stops it (SIGTERM, its grace period); TaaS makes it again.
    evicted: str | None = None
    #: metadata.deletionTimestamp: when its grace period ends (a kubelet would have stopped it).
    deletion_deadline: datetime | None = None
    #: Deleted from the apiserver already: the operator remembers a pod lost with its node after
    #: its DELETED event (`controller.watch.children`), so a pass can tell a replica lost with
    #: its node from one merely missing (the pods are gone before a pass may see why).
    gone: bool = False
    #: Kueue's pod groups (`planner.kueue`): the group the pod belongs to (its label) ...
    kueue_group: str | None = None
    #: ... Kueue's finalizer is on it (Kueue counts how it ends) ...
    kueue_finalizer: bool = False
    #: ... it waits for Kueue to admit its group (Kueue's scheduling gate) ...
    kueue_gated: bool = False
    #: ... Kueue stopped it ("<reason>: <message>" of its TerminationTarget condition) ...
    kueue_stopped: str | None = None
    #: ... and TaaS has told Kueue the group will not retry it (`retriable-in-group: false`).
    kueue_closed: bool = False

    @property
    def lost_with_node(self) -> bool:
        """Its replica was lost with its node, not ended: evicted from a node that stopped
        responding while it ran (or waited to run), or removed because its node was deleted."""
        if self.node_deleted:
            return True
        return self.evicted_from_node and self.phase in ("Running", "Pending")

    @property
    def crash_looping(self) -> bool:
        """Restarted in place by the kubelet and now waiting to be started again."""
        return self.waiting_reason == "CrashLoopBackOff" or (
            self.restart_count > 0 and self.waiting_reason is not None
        )

    @property
    def active(self) -> bool:
        """Running or Pending and not being deleted."""
        return not self.deleting and self.phase in ("Running", "Pending")

    @classmethod
    def from_manifest(cls, pod: Mapping[str, Any]) -> ObservedPod | None:
        """Read a Kubernetes pod (camelCase dict); None if it lacks the replica labels."""
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        rtype = normalize_replica_type(str(labels.get(LABEL_REPLICA_TYPE, "")))
        index = str(labels.get(LABEL_REPLICA_INDEX, ""))
        if rtype is None or not index.isdigit():
            return None
        status = pod.get("status") or {}
        statuses = list(status.get("containerStatuses") or [])
        init_statuses = list(status.get("initContainerStatuses") or [])
        exit_code, reason = None, status.get("reason")
        message: str | None = None
        waiting: dict[str, Any] = {}
        for cs in [*init_statuses, *statuses]:
            if cs in statuses and cs.get("name") != DEFAULT_CONTAINER_NAME:
                continue
            state = (cs.get("state") or {}).get("waiting") or {}
            if state.get("reason") and state["reason"] not in _STARTING and not waiting:
                waiting = state
        for cs in statuses:
            if cs.get("name") != DEFAULT_CONTAINER_NAME:
                continue
            terminated = (cs.get("state") or {}).get("terminated") or (
                cs.get("lastState") or {}
            ).get("terminated")
            if terminated:
                exit_code = terminated.get("exitCode")
                reason = terminated.get("reason") or reason
            ended = (cs.get("state") or {}).get("terminated") or {}
            message = str(ended["message"]) if ended.get("message") else None
        unschedulable = next(
            (
                str(cond.get("message") or "no node fits")
                for cond in status.get("conditions") or []
                if cond.get("type") == "PodScheduled"
                and cond.get("status") == "False"
                and cond.get("reason") == "Unschedulable"
            ),
            None,
        )
        target: Mapping[str, Any] = next(
            (
                cond
                for cond in status.get("conditions") or []
                if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True"
            ),
            {},
        )
        disruption = str(target.get("reason") or "")
        evicted = disruption == "DeletionByTaintManager"
        deadline = meta.get("deletionTimestamp")
        stopped = next(
            (
                f"{cond.get('reason') or 'Stopped'}: {cond.get('message') or 'by Kueue'}"
                for cond in status.get("conditions") or []
                if cond.get("type") == KUEUE_STOPPED_CONDITION and cond.get("status") == "True"
            ),
            None,
        )
        gates = (pod.get("spec") or {}).get("schedulingGates") or []
        annotations = meta.get("annotations") or {}
        return cls(
            name=str(meta.get("name", "")),
            replica_type=rtype,
            index=int(index),
            phase=status.get("phase") or "Pending",
            uid=str(meta.get("uid", "")),
            exit_code=exit_code,
            reason=reason,
            restart_count=sum(int(cs.get("restartCount") or 0) for cs in statuses + init_statuses),
            deleting=bool(meta.get("deletionTimestamp")),
            pod_ip=status.get("podIP") or None,
            progress_port=_progress_port(pod.get("spec") or {}),
            waiting_reason=waiting.get("reason"),
            waiting_message=waiting.get("message"),
            termination_message=message,
            unschedulable=unschedulable,
            node=(pod.get("spec") or {}).get("nodeName") or None,
            evicted_from_node=evicted and bool(deadline),
            node_deleted=disruption == "DeletionByPodGC",
            evicted=(
                f"{disruption}: {target.get('message') or 'evicted'}"
                if disruption and disruption not in _LOST_WITH_NODE and deadline
                else None
            ),
            deletion_deadline=_timestamp(deadline),
            kueue_group=labels.get(KUEUE_GROUP_LABEL) or None,
            kueue_finalizer=KUEUE_FINALIZER in (meta.get("finalizers") or []),
            kueue_gated=any(g.get("name") == KUEUE_GATE for g in gates),
            kueue_stopped=stopped,
            kueue_closed=annotations.get(KUEUE_RETRIABLE_ANNOTATION) == "false",
        )


def _progress_port(spec: Mapping[str, Any]) -> int | None:
    """The tensorflow container's TCP port named PROGRESS_PORT_NAME (None with hostNetwork)."""
    if spec.get("hostNetwork"):
        return None
    for container in spec.get("containers") or []:
        if container.get("name") != DEFAULT_CONTAINER_NAME:
            continue
        for port in container.get("ports") or []:
            number = port.get("containerPort")
            if port.get("name") == PROGRESS_PORT_NAME and port.get("protocol", "TCP") == "TCP":
                return number if isinstance(number, int) and 0 < number < 65536 else None
    return None


def _timestamp(value: Any) -> datetime | None:
    """An RFC 3339 time as the apiserver writes it (a datetime passes through)."""
    if not value:
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
