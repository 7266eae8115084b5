"""Operator settings: one pydantic-settings model, read from flags (`taas operator --help`) and env.

Every setting has an environment variable `TAAS_<NAME>` (e.g. `TAAS_CLUSTER_DOMAIN`), so the Helm
chart can set them on the Deployment, and a flag for people at a terminal. This model is the one
place a setting is spelled: `controller.flags` builds the flags from its fields (name, type,
description, default and the `flag` extra below), and a test checks that every field reaches
the chart (values.yaml, values.schema.json, the Deployment's env).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from taas_operator.api.constants import (
    DEFAULT_GANG_POD_SCHEDULER,
    DEFAULT_MAX_JOB_BYTES,
    DEFAULT_NODE_LOST_TOLERATION_SECONDS,
    DEFAULT_TENSORBOARD_IMAGE,
    GANG_SCHEDULER_PLUGINS,
)


def _flag(
    flag: str, metavar: str = "", *, short: str = "", every: tuple[str, str] | None = None
) -> dict[str, Any]:
    """How the setting is written on the command line (read by `controller.flags`): its flag,
    its metavar and short form, and for a list whose empty value means "all" the flag (and
    short form) that asks for that instead."""
    return {"flag": flag, "metavar": metavar, "short": short, "every": list(every or ())}


#: The most passes one namespace takes per turn (`namespace_weights`).
MAX_WEIGHT = 100


class OperatorSettings(BaseSettings):
    """What the operator needs to know that is not in a TFJob."""

    model_config = SettingsConfigDict(env_prefix="TAAS_", extra="forbid")

    namespaces: list[str] = Field(
        default_factory=list,
        description="Namespaces to watch; empty means every namespace (cluster-wide).",
        json_schema_extra=_flag("--namespace", "NS", short="-n", every=("--all-namespaces", "-A")),
    )
    cluster_domain: str = Field(
        default="",
        description="Cluster DNS domain appended after `.svc` in TF_CONFIG hosts, e.g. "
        "`cluster.local`; empty leaves hosts as `<svc>.<ns>.svc:<port>` (Kubeflow's default).",
        json_schema_extra=_flag("--cluster-domain", "D"),
    )
    concurrency: int = Field(
        default=16,
        ge=1,
        le=256,
        description="Kubernetes API calls the operator has in flight at once, over all jobs "
        "together; a quarter of it (at least 2) is how many jobs it works on at once.",
        json_schema_extra=_flag("--concurrency", "N"),
    )
    log_level: str = Field(
        default="INFO",
        pattern="^(DEBUG|INFO|WARNING|ERROR)$",
        description="Log level: DEBUG, INFO, WARNING or ERROR.",
        json_schema_extra=_flag("--log-level", "L"),
    )
    peering: str = Field(
        default="",
        description="kopf peering name for leader election between operator replicas; empty "
        "runs standalone (one replica).",
        json_schema_extra=_flag("--peering", "NAME"),
    )
    health_port: int = Field(
        default=8080,
        ge=0,
        le=65535,
        description="Port of /healthz (liveness); 0 turns it off.",
        json_schema_extra=_flag("--health-port", "P"),
    )
    health_host: str = Field(
        default="127.0.0.1",
        description="IP address /healthz and /metrics listen on: 127.0.0.1 keeps them on this "
        "machine; in a pod, the pod's IP (the chart's default) lets the kubelet probe it and "
        "Prometheus scrape it; 0.0.0.0 is every interface.",
        json_schema_extra=_flag("--health-host", "IP"),
    )
    metrics_port: int = Field(
        default=8081,
        ge=0,
        le=65535,
        description="Port of /metrics (Prometheus: Kubeflow's training_operator_jobs_*_total "
        "counters and TaaS's own), on the health host; 0 turns it off.",
        json_schema_extra=_flag("--metrics-port", "P"),
    )
    progress: bool = Field(
        default=True,
        description="Read each running TFJob's training progress from its chief (programs "
        "using the trainer library serve it on port 2223) into status.progress: the PROGRESS "
        "and ETA columns of `kubectl get tfjobs`.",
        json_schema_extra=_flag("--no-progress"),
    )
    progress_interval: int = Field(
        default=30,
        ge=1,
        le=3600,
        description="Seconds between two reads of a chief's progress, and the least time "
        "between two status writes that only update it.",
        json_schema_extra=_flag("--progress-interval", "S"),
    )
    operator_namespace: str = Field(
        default="",
        description="Namespace of the operator's own pods (the chart passes it): each TFJob's "
        "NetworkPolicy admits it to the chief's progress port. Empty: no such rule (an "
        "operator outside the cluster).",
        json_schema_extra=_flag("--operator-namespace", "NS"),
    )
    network_policy: bool = Field(
        default=True,
        description="Create a NetworkPolicy per TFJob that admits traffic to its TensorFlow "
        "ports only from pods of the same job (TensorFlow's gRPC servers are unauthenticated).",
        json_schema_extra=_flag("--no-network-policy"),
    )
    network_policy_extra_namespaces: list[str] = Field(
        default_factory=list,
        description="Namespace names also admitted to every job's TensorFlow ports (e.g. "
        "monitoring, TensorBoard).",
        json_schema_extra=_flag("--network-policy-namespace", "NS"),
    )

    gang_scheduler_name: str = Field(
        default="",
        description="Gang scheduler to honour runPolicy.schedulingPolicy with, as Kubeflow's "
        "training-operator flag of the same name: scheduler-plugins gives each TFJob a "
        "PodGroup (scheduling.x-k8s.io/v1alpha1, coscheduling) and its pods that PodGroup's "
        "label and the gang scheduler's name; empty: off.",
        json_schema_extra=_flag("--gang-scheduler-name", "NAME"),
    )
    gang_pod_scheduler_name: str = Field(
        default=DEFAULT_GANG_POD_SCHEDULER,
        pattern="^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$",
        description="schedulerName given to the pods of gang-scheduled TFJobs whose template "
        "names no scheduler: the name the scheduler-plugins scheduler runs under.",
        json_schema_extra=_flag("--gang-pod-scheduler-name", "NAME"),
    )

    node_lost_toleration_seconds: int = Field(
        default=DEFAULT_NODE_LOST_TOLERATION_SECONDS,
        ge=0,
        le=86400,
        description="Seconds each TFJob pod stays bound to a node judged lost before "
        "Kubernetes evicts it and TaaS makes the replica again elsewhere: a NoExecute "
        "toleration of node.kubernetes.io/not-ready and of unreachable, each added unless the "
        "pod's template has one of that taint (which then stands). 0: Kubernetes' 300 s.",
        json_schema_extra=_flag("--node-lost-toleration-seconds", "S"),
    )

    tensorboard_image: str = Field(
        default=DEFAULT_TENSORBOARD_IMAGE,
        min_length=1,
        description="Image of the TensorBoard the operator runs for each TFJob annotated "
        "taas.dev/tensorboard=true, reading the chief's model_dir volume (it needs the "
        "`tensorboard` command: the trainer image has it).",
        json_schema_extra=_flag("--tensorboard-image", "IMAGE"),
    )
    tensorboard_allow_from: list[str] = Field(
        default_factory=list,
        description="CIDRs admitted to the port of the TensorBoards the operator runs, whose "
        "NetworkPolicy admits no pod (TensorBoard has no authentication): the address of an "
        "apiserver on other nodes than the TensorBoard's, whose service proxy `taas "
        "tensorboard` uses. Empty: the nodes' own traffic only.",
        json_schema_extra=_flag("--tensorboard-allow-from", "CIDR"),
    )
    kueue_pod_groups: bool = Field(
        default=False,
        description="Make the pods of every TFJob labelled kueue.x-k8s.io/queue-name one Kueue "
        "pod group (that label, a pod-group-name label and a pod-group-total-count annotation "
        "from creation), so Kueue's `pod` integration admits the job whole: for a Kueue whose "
        "kubeflow.org/tfjob integration is not enabled.",
        json_schema_extra=_flag("--kueue-pod-groups"),
    )
    max_job_bytes: int = Field(
        default=DEFAULT_MAX_JOB_BYTES,
        ge=0,
        description="Most bytes one TFJob's pods and services may take in etcd (estimated "
        "before any is made); a larger job fails with reason JobTooLarge naming both sizes. "
        "Default 256 MiB, an eighth of etcd's default quota; 0: no limit.",
        json_schema_extra=_flag("--max-job-bytes", "BYTES"),
    )
    creating_per_namespace: int = Field(
        default=32,
        ge=0,
        le=10000,
        description="TFJobs of one namespace being created at once (their pods not all made "
        "yet); another job of that namespace waits, with condition Running False "
        "NamespaceCreationLimit, until one is made. 0: no limit.",
        json_schema_extra=_flag("--creating-per-namespace", "N"),
    )
    namespace_weights: list[str] = Field(
        default_factory=list,
        description="NAMESPACE=WEIGHT: passes a namespace takes per turn of the operator's "
        "queue (1 to 100; every other namespace takes 1). Namespaces with work take turns.",
        json_schema_extra=_flag("--namespace-weight", "NS=W"),
    )

    @field_validator("gang_scheduler_name")
    @classmethod
    def _a_known_gang_scheduler(cls, value: str) -> str:
        if value not in ("", GANG_SCHEDULER_PLUGINS):
            raise ValueError(
                f"must be {GANG_SCHEDULER_PLUGINS!r} (scheduler-plugins' coscheduling) or empty "
                "(off); no other gang scheduler is supported"
            )
        return value

    @field_validator("tensorboard_allow_from")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        try:
            return [str(ipaddress.ip_network(cidr, strict=False)) for cidr in value]
        except ValueError as err:
            raise ValueError(f"must be CIDRs such as 10.0.0.5/32: {err}") from None

    @field_validator("namespace_weights")
    @classmethod
    def _weights(cls, value: list[str]) -> list[str]:
        for entry in value:
            name, _, weight = entry.partition("=")
            if not name or not weight.isdigit() or not 1 <= int(weight) <= MAX_WEIGHT:
                raise ValueError(
                    f"{entry!r} must be NAMESPACE=WEIGHT with a weight of 1 to {MAX_WEIGHT}, "
                    "e.g. team-a=4"
                )
        return value

    @field_validator("health_host")
    @classmethod
    def _an_ip_address(cls, value: str) -> str:
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            raise ValueError("must be an IP address, e.g. 127.0.0.1, 0.0.0.0 or ::1") from None

    @property
    def health_url(self) -> str | None:
        """Where kopf serves /healthz (an IPv6 host in brackets); None when it is off."""
        if not self.health_port:
            return None
        host = f"[{self.health_host}]" if ":" in self.health_host else self.health_host
        return f"http://{host}:{self.health_port}/healthz"

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """(host, port) of /metrics; None when it is off."""
        return (self.health_host, self.metrics_port) if self.metrics_port else None

    @property
    def progress_namespace(self) -> str:
        """The namespace each job's NetworkPolicy admits to the progress port ("": none)."""
        return self.operator_namespace if self.progress else ""

    @property
    def weights(self) -> dict[str, int]:
        """`namespace_weights` as namespace -> weight."""
        return {
            name: int(weight)
            for name, _, weight in (entry.partition("=") for entry in self.namespace_weights)
        }

    @property
    def passes_at_once(self) -> int:
        """How many jobs the work queue passes over at once: a quarter of `concurrency` (at
        least 2), since one pass alone issues many API calls at once."""
        return max(2, self.concurrency // 4)
