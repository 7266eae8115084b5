"""The benchmark workloads: how many TFJobs, how many replicas each, and their manifests (the
one job-shape builder every benchmark and the fault tests use).

    Workload(key, title, jobs, ps, workers, timeout_s, restart)
    WORKLOADS_FULL / WORKLOADS_QUICK: dict[str, Workload]      # keys "a", "b", "c", "d"
    tfjob_manifest(name, namespace, ps, workers, *, requests=None, node_loss=None,
                   clean_pod_policy=None) -> dict
    create_jobs(api, namespace, workload) -> {job: time its POST was sent}

Every replica runs an image that is never pulled (no kubelet runs): only the objects matter.
(a)-(c) create their TFJobs at once and time their objects (`measure.run_one`); (d), a
`restart` workload, has its TFJobs present and handled, restarts the controller among them and
times one new job (`restart.run_restart`).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes import client
from pydantic import BaseModel, Field

IMAGE = "registry.invalid/taas-bench/noop:1"
CREATE_THREADS = 16  # client threads creating a workload's TFJobs at once


class Workload(BaseModel):
    """N TFJobs of `ps` PS + `workers` workers, created at once."""

    key: str
    title: str
    jobs: int = Field(ge=1)
    ps: int = Field(ge=0)
    workers: int = Field(ge=1)
    timeout_s: float = 600.0
    #: The jobs are made beforehand and the controller restarted among them (workload d).
    restart: bool = False

    @property
    def replicas(self) -> int:
        """Replicas (pods, and services) per job."""
        return self.ps + self.workers

    def job_names(self) -> list[str]:
        """Names of the TFJobs, `bench-<key>-<i>`."""
        return [f"bench-{self.key}-{i:04d}" for i in range(self.jobs)]


WORKLOADS_FULL: dict[str, Workload] = {
    "a": Workload(
        key="a", title="1 TFJob x 64 replicas (4 PS + 60 workers)", jobs=1, ps=4, workers=60
    ),
    "b": Workload(key="b", title="200 TFJobs x 4 replicas at once", jobs=200, ps=1, workers=3),
    "c": Workload(
        key="c",
        title="1,000 TFJobs present (idle), 1 worker each",
        jobs=1000,
        ps=0,
        workers=1,
        timeout_s=1200.0,
    ),
    "d": Workload(
        key="d",
        title="5,000 TFJobs present, controller restarted, 1 new job",
        jobs=5000,
        ps=0,
        workers=1,
        timeout_s=1800.0,
        restart=True,
    ),
}

WORKLOADS_QUICK: dict[str, Workload] = {
    "a": Workload(
        key="a",
        title="1 TFJob x 16 replicas (2 PS + 14 workers) [quick]",
        jobs=1,
        ps=2,
        workers=14,
        timeout_s=180.0,
    ),
    "b": Workload(
        key="b",
        title="20 TFJobs x 4 replicas at once [quick]",
        jobs=20,
        ps=1,
        workers=3,
        timeout_s=180.0,
    ),
    "c": Workload(
        key="c",
        title="100 TFJobs present (idle), 1 worker each [quick]",
        jobs=100,
        ps=0,
        workers=1,
        timeout_s=300.0,
    ),
    "d": Workload(
        key="d",
        title="500 TFJobs present, controller restarted, 1 new job [quick]",
        jobs=500,
        ps=0,
        workers=1,
        timeout_s=600.0,
        restart=True,
    ),
}


class NodeLoss(BaseModel):
    """How a job's pods ride out a lost node: OnFailure, a short grace period, and tolerations
    of an unreachable or not-ready node for `toleration_s`."""

    grace_s: int
    toleration_s: int


def _replica(
    count: int, requests: dict[str, str] | None, node_loss: NodeLoss | None
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "tensorflow", "image": IMAGE}
    if requests is not None:
        container["resources"] = {"requests": requests, "limits": requests}
    pod_spec: dict[str, Any] = {"containers": [container]}
    if node_loss is not None:
        pod_spec["terminationGracePeriodSeconds"] = node_loss.grace_s
        pod_spec["tolerations"] = [
            {
                "key": key,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": node_loss.toleration_s,
            }
            for key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
        ]
    policy = "Never" if node_loss is None else "OnFailure"
    return {"replicas": count, "restartPolicy": policy, "template": {"spec": pod_spec}}


def tfjob_manifest(
    name: str,
    namespace: str,
    ps: int,
    workers: int,
    *,
    requests: dict[str, str] | None = None,
    node_loss: NodeLoss | None = None,
    clean_pod_policy: str | None = None,
) -> dict[str, Any]:
    """A kubeflow.org/v1 TFJob every contestant accepts: `workers` workers and `ps` PS of the
    never-pulled image, with these `requests` (as limits too), riding out a lost node when
    `node_loss` says how, and `runPolicy.cleanPodPolicy` written out when given."""
    specs: dict[str, Any] = {"Worker": _replica(workers, requests, node_loss)}
    if ps:
        specs["PS"] = _replica(ps, requests, node_loss)
    spec: dict[str, Any] = {"tfReplicaSpecs": specs}
    if clean_pod_policy is not None:
        spec = {"runPolicy": {"cleanPodPolicy": clean_pod_policy}, **spec}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def create_jobs(api: client.ApiClient, namespace: str, workload: Workload) -> dict[str, float]:
    """Create every TFJob of the workload at once; return job -> time its POST was sent."""
    custom = client.CustomObjectsApi(api)
    sent: dict[str, float] = {}

    def create(name: str) -> None:
        body = tfjob_manifest(name, namespace, workload.ps, workload.workers)
        sent[name] = time.monotonic()
        custom.create_namespaced_custom_object("kubeflow.org", "v1", namespace, "tfjobs", body)

    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        for future in [pool.submit(create, name) for name in workload.job_names()]:
            future.result()
    return sent
