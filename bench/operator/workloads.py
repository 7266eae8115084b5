"""The benchmark workloads: how many TFJobs, how many replicas each, and their manifests.

    Workload(key, title, jobs, ps, workers, timeout_s, restart)
    WORKLOADS_FULL / WORKLOADS_QUICK: dict[str, Workload]      # keys "a", "b", "c", "d"
    tfjob_manifest(name, namespace, ps, workers) -> dict

Every replica runs an image that is never pulled (no kubelet runs): only the objects matter.
(a)-(c) create their TFJobs at once and time their objects (`measure.run_one`); (d), a
`restart` workload, has its TFJobs present and handled, restarts the controller among them and
times one new job (`restart.run_restart`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

IMAGE = "registry.invalid/taas-bench/noop:1"


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


def _replica(count: int) -> dict[str, Any]:
    return {
        "replicas": count,
        "restartPolicy": "Never",
        "template": {
            "spec": {"containers": [{"name": "tensorflow", "image": IMAGE}]},
        },
    }


def tfjob_manifest(name: str, namespace: str, ps: int, workers: int) -> dict[str, Any]:
    """A kubeflow.org/v1 TFJob both controllers accept."""
    specs: dict[str, Any] = {"Worker": _replica(workers)}
    if ps:
        specs["PS"] = _replica(ps)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"tfReplicaSpecs": specs},
    }
