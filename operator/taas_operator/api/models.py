"""Pydantic v2 models of the kubeflow.org/v1 TFJob (spec, status, metadata).

The models hold already-validated data: build them with `taas_operator.api.parse_tfjob`, which
runs the same rules as the CRD's schema and CEL and names the failing field. Field names are
snake_case in Python and camelCase on the wire (`model_dump(by_alias=True)`); times are
timezone-aware `datetime`s, written as RFC 3339 with whole seconds like Kubernetes does.

The pod template stays a plain dict (a Kubernetes PodTemplateSpec): TaaS copies it into pods and
only looks at the `tensorflow` container's name, ports and env.

TaaS adds two status fields Kubeflow lacks: `status.recreations` (pod name -> `Recreation`), the
count of pods the operator deleted and recreated after a failure, so backoffLimit can cap
recreations (ExitCode, evictions) level-triggered, across operator restarts; and
`status.progress` (`TFJobProgress`), the chief's training progress as last read (what the
PROGRESS and ETA columns of `kubectl get tfjobs` show; `taas_operator.planner.progress`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel

from taas_operator.api.constants import (
    API_VERSION,
    CHIEF_TYPES,
    DEFAULT_CLEAN_POD_POLICY,
    DEFAULT_REPLICAS,
    DEFAULT_RESTART_POLICY,
    KIND,
    MAX_REPLICAS,
    MAX_SECONDS,
    REPLICA_TYPES,
    CleanPodPolicy,
    ReplicaType,
    RestartPolicy,
    SuccessPolicy,
)


def format_time(value: datetime) -> str:
    """RFC 3339 in UTC with whole seconds, as Kubernetes' metav1.Time writes it."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Time = Annotated[datetime, PlainSerializer(format_time, return_type=str, when_used="json")]


class _Wire(BaseModel):
    """camelCase on the wire, snake_case in Python; unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=False
    )

    def to_dict(self) -> dict[str, Any]:
        """The object as Kubernetes JSON (camelCase, unset optionals left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ObjectMeta(_Wire):
    """The parts of metav1.ObjectMeta TaaS reads; anything else is kept as extra."""

    model_config = ConfigDict(extra="allow")

    name: str = ""
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    generation: int | None = None
    resource_version: str | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None


class ReplicaSpec(_Wire):
    """One replica type: how many pods, their template, and what to do when one fails."""

    replicas: int = Field(default=DEFAULT_REPLICAS, ge=0, le=MAX_REPLICAS)
    template: dict[str, Any] = Field(default_factory=dict)
    restart_policy: RestartPolicy = DEFAULT_RESTART_POLICY

    def containers(self) -> list[dict[str, Any]]:
        """The template's containers (empty list when absent)."""
        return list((self.template.get("spec") or {}).get("containers") or [])


class SchedulingPolicy(_Wire):
    """Gang scheduling: honoured with `--gang-scheduler-name` (`taas_operator.planner.gang`)."""

    min_available: int | None = Field(default=None, ge=0, le=MAX_REPLICAS)
    queue: str | None = None
    min_resources: dict[str, Any] | None = None
    priority_class: str | None = None
    schedule_timeout_seconds: int | None = Field(default=None, ge=0, le=MAX_SECONDS)


class RunPolicy(_Wire):
    """Job-wide runtime policy."""

    clean_pod_policy: CleanPodPolicy = DEFAULT_CLEAN_POD_POLICY
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0, le=MAX_SECONDS)
    active_deadline_seconds: int | None = Field(default=None, ge=0, le=MAX_SECONDS)
    backoff_limit: int | None = Field(default=None, ge=0, le=MAX_SECONDS)
    scheduling_policy: SchedulingPolicy | None = None
    suspend: bool = False
    managed_by: str | None = None


class TFJobSpec(_Wire):
    """spec of a TFJob; tfReplicaSpecs keys are canonical (`Worker`, not `worker`)."""

    tf_replica_specs: dict[ReplicaType, ReplicaSpec] = Field(alias="tfReplicaSpecs")
    run_policy: RunPolicy = Field(default_factory=RunPolicy)
    success_policy: SuccessPolicy = ""
    enable_dynamic_worker: bool = False


class JobCondition(_Wire):
    """One entry of status.conditions."""

    model_config = ConfigDict(extra="allow")

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str = ""
    message: str = ""
    last_update_time: Time | None = None
    last_transition_time: Time | None = None


class ReplicaStatus(_Wire):
    """Pod counts of one replica type."""

    model_config = ConfigDict(extra="allow")

    active: int = 0
    succeeded: int = 0
    failed: int = 0
    #: Kubeflow's: the label selector of this type's pods (written for Worker: the scale
    #: subresource's labelSelectorPath).
    selector: str | None = None


class Recreation(_Wire):
    """TaaS: how often one pod slot was deleted and recreated after a failure."""

    count: int = 0
    last_pod_uid: str = Field(default="", alias="lastPodUID")
    last_exit_code: int | None = None
    last_reason: str | None = None


class ScalarPoint(_Wire):
    """One logged value of a scalar: the global step it was logged at, and the value."""

    step: int = 0
    value: float


class TFJobProgress(_Wire):
    """TaaS: how far training got, as the chief last reported it (planner.progress writes it).

    `percent` and `etaSeconds` are for programs; `percentText` ("40%") and `eta` ("1m35s") are
    what `kubectl get tfjobs` prints (printer columns read strings as they are). The ETA is the
    chief's estimate at `reportTime`; `lastUpdateTime` is when the operator wrote this.
    """

    model_config = ConfigDict(extra="allow")

    percent: int = Field(default=0, ge=0, le=100)
    percent_text: str = "0%"
    step: int = 0
    max_steps: int = 0
    loss: float | None = None
    examples_per_second: float | None = None
    eta_seconds: int | None = None
    eta: str | None = None
    scalars: dict[str, list[ScalarPoint]] = Field(default_factory=dict)
    report_time: Time | None = None
    last_update_time: Time | None = None


class TFJobStatus(_Wire):
    """status of a TFJob."""

    model_config = ConfigDict(extra="allow")

    conditions: list[JobCondition] = Field(default_factory=list)
    replica_statuses: dict[str, ReplicaStatus] = Field(default_factory=dict)
    start_time: Time | None = None
    completion_time: Time | None = None
    last_reconcile_time: Time | None = None
    recreations: dict[str, Recreation] = Field(default_factory=dict)
    progress: TFJobProgress | None = None
    #: TaaS: what the job is doing (`api.state`), the State printer column; and why.
    state: str | None = None
    state_reason: str | None = None
    #: TaaS: the Worker replicas the last pass planned for (`planner.scaling`).
    worker_replicas: int | None = None

    def condition(self, type_: str) -> JobCondition | None:
        """The condition of this type, if present."""
        return next((c for c in self.conditions if c.type == type_), None)

    def is_true(self, type_: str) -> bool:
        """Whether the condition of this type is present with status True."""
        cond = self.condition(type_)
        return cond is not None and cond.status == "True"

    @property
    def finished(self) -> bool:
        """Succeeded or Failed: terminal, nothing but cleanup happens afterwards."""
        return self.is_true("Succeeded") or self.is_true("Failed")


class TFJob(_Wire):
    """A whole TFJob object."""

    model_config = ConfigDict(extra="ignore")

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta
    spec: TFJobSpec
    status: TFJobStatus = Field(default_factory=TFJobStatus)

    @property
    def name(self) -> str:
        """metadata.name."""
        return self.metadata.name

    @property
    def namespace(self) -> str:
        """metadata.namespace, `default` when unset (local runs)."""
        return self.metadata.namespace or "default"

    def replica_types(self) -> list[ReplicaType]:
        """Replica types present in the spec, in Kubeflow's status order."""
        return [t for t in REPLICA_TYPES if t in self.spec.tf_replica_specs]

    def has_chief(self) -> bool:
        """Whether a Chief or Master replica type is present."""
        return any(t in CHIEF_TYPES for t in self.spec.tf_replica_specs)
