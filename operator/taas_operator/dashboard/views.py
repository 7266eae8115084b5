"""What the page shows, built from Kubernetes-shaped JSON: the one data model of the dashboard.

    job_summary(tfjob) -> JobSummary                    # a row of the jobs list
    replica_views(tfjob, pods) -> list[ReplicaView]     # one per replica slot (a pod or not yet)
    KubeEvent.from_object(event) -> KubeEvent          # the one Event model (api.events)
    job_detail(tfjob, pods, events) -> JobDetail        # the job page
    tensorboard_url(tfjob) -> str | None                # the `taas.dev/tensorboard` annotation
    tensorboard_hint(tfjob) -> str | None               # `taas tensorboard ...` for one the
                                                        # operator runs (annotation "true")

Both sources feed these functions the same shapes: a cluster gives the TFJob, pods and events
as the apiserver serves them; a local run (`taas run --dashboard`) gives its TFJob model's JSON,
pods written from its processes in the pod shape, and the planner's events in the Event shape.
So the page, its tests and its wording are the same for both places a job runs.

The progress is passed through as the TFJob status holds it (`status.progress`, written by the
operator or `taas run` from the chief's reports): the dashboard never computes progress itself.

Nothing secret reaches the page: the YAML view drops `metadata.managedFields` and the
`kubectl.kubernetes.io/last-applied-configuration` annotation (a copy of the spec), and a
container's `env` values taken from Secrets are references only (Kubernetes never inlines them).
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel, Field

from taas_operator.api.constants import (
    DEFAULT_CONTAINER_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    MAX_REPLICAS,
    REPLICA_TYPES,
    TENSORBOARD_ANNOTATION,
)
from taas_operator.api.events import KubeEvent
from taas_operator.api.state import body_state
from taas_operator.api.validation import normalize_replica_type
from taas_operator.tensorboard.objects import tensorboard_command, tensorboard_link
from taas_operator.tfjob import replica_name

_DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


class ReplicaCounts(BaseModel):
    """Pods of one replica type: wanted, and by state (the status's replicaStatuses)."""

    desired: int = 0
    active: int = 0
    succeeded: int = 0
    failed: int = 0


class JobSummary(BaseModel):
    """One TFJob as the list shows it."""

    namespace: str
    name: str
    uid: str = ""
    state: str
    reason: str = ""  # why (api.state): the page shows "Waiting: ImagePullBackOff"
    message: str = ""
    replicas: dict[str, ReplicaCounts] = Field(default_factory=dict)
    progress: dict[str, Any] | None = None
    created: str | None = None
    started: str | None = None
    completed: str | None = None
    suspended: bool = False
    tensorboard: str | None = None
    #: The command that opens the TensorBoard the operator runs for the job, on this machine.
    tensorboard_command: str | None = None


class ConditionView(BaseModel):
    """One condition, for the timeline."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    time: str | None = None


class ReplicaView(BaseModel):
    """One replica slot: its pod, if any."""

    name: str
    type: str
    index: int
    phase: str
    ready: bool = False
    restarts: int = 0
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    node: str = ""
    started: str | None = None


class JobDetail(BaseModel):
    """The job page."""

    job: JobSummary
    conditions: list[ConditionView]
    replicas: list[ReplicaView]
    events: list[KubeEvent]
    yaml: str


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj.get("metadata") or {})


def job_state(tfjob: dict[str, Any]) -> tuple[str, str, str]:
    """(state, reason, message): the job's state and reason in the words of `kubectl get
    tfjobs` and `taas get` (`api.state`; shown "Waiting: ImagePullBackOff"), and the message
    behind them."""
    state = body_state(tfjob.get("status"))
    if not state.state:
        return state.shown, "", "the operator has not picked the job up yet"
    return state.shown, state.reason, state.message


def tensorboard_url(tfjob: dict[str, Any]) -> str | None:
    """The job's TensorBoard link (annotation `taas.dev/tensorboard`), http(s) URLs only: any
    other scheme (javascript:, data:) would run in the page."""
    return tensorboard_link((_meta(tfjob).get("annotations") or {}).get(TENSORBOARD_ANNOTATION))


def tensorboard_hint(tfjob: dict[str, Any]) -> str | None:
    """`taas tensorboard NAME -n NS` for a cluster's job that asks the operator for a
    TensorBoard (annotation "true"); None for any other job, and for a local run (no uid)."""
    meta = _meta(tfjob)
    value = str((meta.get("annotations") or {}).get(TENSORBOARD_ANNOTATION) or "")
    if value.strip().lower() != "true" or not meta.get("uid"):
        return None
    return tensorboard_command(str(meta.get("namespace") or "default"), str(meta.get("name", "")))


def job_summary(tfjob: dict[str, Any]) -> JobSummary:
    """A row of the jobs list."""
    meta, spec, status = _meta(tfjob), tfjob.get("spec") or {}, tfjob.get("status") or {}
    state, reason, message = job_state(tfjob)
    counts: dict[str, ReplicaCounts] = {}
    specs = spec.get("tfReplicaSpecs") or {}
    for rtype in REPLICA_TYPES:
        if rtype in specs:
            counts[rtype] = ReplicaCounts(desired=int((specs[rtype] or {}).get("replicas", 1)))
    for rtype, values in (status.get("replicaStatuses") or {}).items():
        entry = counts.setdefault(rtype, ReplicaCounts())
        for key in ("active", "succeeded", "failed"):
            setattr(entry, key, int((values or {}).get(key) or 0))
    progress = status.get("progress")
    return JobSummary(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid") or ""),
        state=state,
        reason=reason,
        message=message,
        replicas=counts,
        progress=dict(progress) if isinstance(progress, dict) else None,
        created=meta.get("creationTimestamp"),
        started=status.get("startTime"),
        completed=status.get("completionTime"),
        suspended=bool((spec.get("runPolicy") or {}).get("suspend")),
        tensorboard=tensorboard_url(tfjob),
        tensorboard_command=tensorboard_hint(tfjob),
    )


def condition_views(tfjob: dict[str, Any]) -> list[ConditionView]:
    """The conditions, oldest transition first."""
    out = [
        ConditionView(
            type=str(c.get("type", "")),
            status=str(c.get("status", "")),
            reason=str(c.get("reason", "")),
            message=str(c.get("message", "")),
            time=c.get("lastTransitionTime") or c.get("lastUpdateTime"),
        )
        for c in (tfjob.get("status") or {}).get("conditions") or []
    ]
    return sorted(out, key=lambda c: c.time or "")


def _container_status(pod: dict[str, Any]) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    named = [s for s in statuses if s.get("name") == DEFAULT_CONTAINER_NAME]
    return dict((named or statuses or [{}])[0])


def pod_view(pod: dict[str, Any]) -> ReplicaView:
    """One pod as a replica row: phase, restarts, exit code and reason, node, start."""
    meta, status = _meta(pod), pod.get("status") or {}
    labels = meta.get("labels") or {}
    container = _container_status(pod)
    state = container.get("state") or {}
    last = (container.get("lastState") or {}).get("terminated") or {}
    terminated = state.get("terminated") or {}
    waiting = state.get("waiting") or {}
    ended = terminated or last
    phase = str(status.get("phase") or "Pending")
    if meta.get("deletionTimestamp"):
        phase = "Terminating"
    elif waiting.get("reason") in ("CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull"):
        phase = str(waiting["reason"])
    rtype = normalize_replica_type(str(labels.get(LABEL_REPLICA_TYPE, ""))) or ""
    code = ended.get("exitCode")
    return ReplicaView(
        name=str(meta.get("name", "")),
        type=rtype,
        index=int(labels.get(LABEL_REPLICA_INDEX, 0) or 0),
        phase=phase,
        ready=bool(container.get("ready")),
        restarts=int(container.get("restartCount") or 0),
        exit_code=None if code is None else int(code),
        reason=str(ended.get("reason") or waiting.get("reason") or status.get("reason") or ""),
        message=str(ended.get("message") or waiting.get("message") or status.get("message") or ""),
        node=str((pod.get("spec") or {}).get("nodeName") or ""),
        started=status.get("startTime") or meta.get("creationTimestamp"),
    )


def replica_views(tfjob: dict[str, Any], pods: list[dict[str, Any]]) -> list[ReplicaView]:
    """One row per replica slot of the spec (in Kubeflow's type order, at most MAX_REPLICAS
    per type: a job stored before the CRD had its bound may ask for 2**31), then pods outside
    it (a scaled-down replica still stopping)."""
    by_name = {_meta(p).get("name"): p for p in pods}
    name = str(_meta(tfjob).get("name", ""))
    rows: list[ReplicaView] = []
    specs = (tfjob.get("spec") or {}).get("tfReplicaSpecs") or {}
    for rtype in REPLICA_TYPES:
        if rtype not in specs:
            continue
        for index in range(min(int((specs[rtype] or {}).get("replicas", 1)), MAX_REPLICAS)):
            pod_name = replica_name(name, rtype.lower(), index)
            pod = by_name.pop(pod_name, None)
            if pod is None:
                rows.append(ReplicaView(name=pod_name, type=rtype, index=index, phase="-"))
            else:
                rows.append(pod_view(pod))
    rows += sorted((pod_view(p) for p in by_name.values()), key=lambda r: (r.type, r.index))
    return rows


def job_yaml(tfjob: dict[str, Any]) -> str:
    """The TFJob as YAML, without managedFields and last-applied-configuration."""
    obj = dict(tfjob)
    meta = dict(_meta(obj))
    meta.pop("managedFields", None)
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k not in _DROPPED_ANNOTATIONS
    }
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    obj["metadata"] = meta
    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False)


def job_detail(
    tfjob: dict[str, Any], pods: list[dict[str, Any]], events: list[dict[str, Any]]
) -> JobDetail:
    """The job page: summary, conditions, replicas, events (oldest first) and YAML."""
    views = sorted(
        (KubeEvent.from_object(e) for e in events),
        key=lambda e: e.last_time.timestamp() if e.last_time else 0.0,
    )
    return JobDetail(
        job=job_summary(tfjob),
        conditions=condition_views(tfjob),
        replicas=replica_views(tfjob, pods),
        events=views,
        yaml=job_yaml(tfjob),
    )
