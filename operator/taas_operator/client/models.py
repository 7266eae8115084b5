"""The client's pydantic models at its boundary (TFJobs themselves are `taas_operator.api.TFJob`).

ReplicaPod     one pod of a job: replica ("worker-1"), phase, restarts, exit code, IP, node
LogLine        one line of a replica's log: replica, pod, text
JobEvent       one Kubernetes event recorded on the job
JobChange      one change a watch saw: ADDED | MODIFIED | DELETED, and the job
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from taas_operator.api.constants import (
    DEFAULT_CONTAINER_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    REPLICA_TYPES,
)
from taas_operator.api.events import KubeEvent
from taas_operator.api.models import TFJob

_ORDER = {t.lower(): i for i, t in enumerate(REPLICA_TYPES)}


class ReplicaPod(BaseModel):
    """One pod of a TFJob, as its status says."""

    name: str
    replica: str  # "worker-1": the prefix `taas run` and `taas logs` use
    replica_type: str = ""
    index: int = 0
    uid: str = ""
    phase: str = "Pending"
    restarts: int = 0
    exit_code: int | None = None
    reason: str | None = None
    pod_ip: str | None = None
    node: str | None = None
    started: bool = False  # its container has started: its log can be read
    deleting: bool = False  # deletionTimestamp set: going away

    @classmethod
    def from_pod(cls, pod: dict[str, Any]) -> ReplicaPod:
        """From a pod object (camelCase JSON)."""
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        labels = meta.get("labels") or {}
        rtype = str(labels.get(LABEL_REPLICA_TYPE, ""))
        index = str(labels.get(LABEL_REPLICA_INDEX, "0"))
        statuses = [
            s
            for s in status.get("containerStatuses") or []
            if s.get("name") == DEFAULT_CONTAINER_NAME
        ]
        own = statuses[0] if statuses else {}
        state = own.get("state") or {}
        ended = state.get("terminated") or (own.get("lastState") or {}).get("terminated") or {}
        return cls(
            name=meta["name"],
            replica=f"{rtype}-{index}" if rtype else meta["name"],
            replica_type=rtype,
            index=int(index) if index.isdigit() else 0,
            uid=str(meta.get("uid", "")),
            phase=status.get("phase") or "Pending",
            restarts=int(own.get("restartCount") or 0),
            exit_code=ended.get("exitCode"),
            reason=ended.get("reason") or status.get("reason"),
            pod_ip=status.get("podIP") or None,
            node=spec.get("nodeName") or None,
            started=bool(state.get("running") or state.get("terminated") or own.get("lastState")),
            deleting=bool(meta.get("deletionTimestamp")),
        )

    @property
    def state(self) -> str:
        """What the table shows: the phase, or Terminating (as kubectl says) while deleted."""
        return "Terminating" if self.deleting else self.phase

    @property
    def order(self) -> tuple[int, int, str]:
        """Sort key: replica types in Kubeflow's order, then index."""
        return _ORDER.get(self.replica_type, len(_ORDER)), self.index, self.name


class LogLine(BaseModel):
    """One line of one replica's log (without its newline)."""

    replica: str
    pod: str
    text: str


#: A Kubernetes event recorded on the TFJob (the one Event model, `api.events`).
JobEvent = KubeEvent


class JobChange(BaseModel):
    """One change of a TFJob, as a watch delivers it."""

    type: Literal["ADDED", "MODIFIED", "DELETED"]
    job: TFJob
