"""Small builders of TFJob manifests and observed pods for the pure-core tests."""

from __future__ import annotations

from typing import Any

from taas_operator.api import TFJob, parse_tfjob
from taas_operator.planner import ObservedPod


def manifest(
    replicas: dict[str, int],
    name: str = "mnist",
    namespace: str = "ns1",
    restart_policy: str = "Never",
    run_policy: dict[str, Any] | None = None,
    ports: dict[str, int] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A TFJob manifest with one `tensorflow` container per replica type."""
    specs: dict[str, Any] = {}
    for rtype, count in replicas.items():
        container: dict[str, Any] = {"name": "tensorflow", "image": "example/train:1"}
        if ports and rtype in ports:
            container["ports"] = [{"name": "tfjob-port", "containerPort": ports[rtype]}]
        specs[rtype] = {
            "replicas": count,
            "restartPolicy": restart_policy,
            "template": {"spec": {"containers": [container]}},
        }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace, "uid": "uid-1"},
        "spec": {"tfReplicaSpecs": specs, "runPolicy": run_policy or {}, **spec},
    }


def job(replicas: dict[str, int], **kwargs: Any) -> TFJob:
    """A parsed TFJob (see `manifest`)."""
    return parse_tfjob(manifest(replicas, **kwargs))


def pod(
    rtype: str,
    index: int,
    phase: str = "Running",
    job_name: str = "mnist",
    **kwargs: Any,
) -> ObservedPod:
    """An observed pod of job `job_name`."""
    name = f"{job_name}-{rtype.lower()}-{index}"
    return ObservedPod.model_validate(
        {
            "name": name,
            "replica_type": rtype,
            "index": index,
            "phase": phase,
            "uid": kwargs.pop("uid", f"{name}-uid"),
            **kwargs,
        }
    )
