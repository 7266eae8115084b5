"""Operator settings: one pydantic-settings model, read from flags (`taas operator --help`) and env.

Every setting has an environment variable `TAAS_<NAME>` (e.g. `TAAS_CLUSTER_DOMAIN`), so the Helm
chart can set them on the Deployment, and a flag of the same name for people at a terminal.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class OperatorSettings(BaseSettings):
    """What the operator needs to know that is not in a TFJob."""

    model_config = SettingsConfigDict(env_prefix="TAAS_", extra="forbid")

    namespaces: list[str] = Field(
        default_factory=list,
        description="Namespaces to watch; empty means every namespace (cluster-wide).",
    )
    cluster_domain: str = Field(
        default="",
        description="Cluster DNS domain appended after `.svc` in TF_CONFIG hosts, e.g. "
        "`cluster.local`; empty leaves hosts as `<svc>.<ns>.svc:<port>` (Kubeflow's default).",
    )
    concurrency: int = Field(
        default=16, ge=1, le=256, description="Pods and services created in parallel per job."
    )
    log_level: str = Field(
        default="INFO", pattern="^(DEBUG|INFO|WARNING|ERROR)$", description="Log level."
    )
    peering: str = Field(
        default="",
        description="kopf peering name for leader election between operator replicas; empty "
        "runs standalone (one replica).",
    )
    health_port: int = Field(
        default=8080, ge=0, le=65535, description="Port of /healthz (liveness); 0 turns it off."
    )
    network_policy: bool = Field(
        default=True,
        description="Create a NetworkPolicy per TFJob that admits traffic to its TensorFlow "
        "ports only from pods of the same job (TensorFlow's gRPC servers are unauthenticated).",
    )
    network_policy_extra_namespaces: list[str] = Field(
        default_factory=list,
        description="Namespace names also admitted to every job's TensorFlow ports (e.g. "
        "monitoring, TensorBoard).",
    )
