"""The scenarios of the simulated-cluster benchmark: cluster shape, TFJobs, and their manifests.

    Scenario(key, title, nodes, gpu_nodes, jobs, ps, workers, lost_nodes, timeout_s)
    SCENARIOS_FULL / SCENARIOS_QUICK: dict[str, Scenario]     # keys "d", "e", "f"
    tfjob_manifest(name, namespace, scenario) -> dict

(d) one big TFJob and (e) many TFJobs at once run until every pod is Running, then the harness
ends every worker (exit code 0, `taas_controlplane.sim.annotations`) and the jobs finish; their
PS run until cleanPodPolicy Running removes them. (f) one TFJob with restartPolicy OnFailure
whose pods tolerate an unreachable node for 2 s and have a 3 s grace period (what a user who
wants fast replacement sets) loses `lost_nodes` nodes: they stop heart-beating. Every pod asks
for 100m CPU and 256 MiB, so the scheduler places them as it would real ones; the image is
never pulled (kwok plays the kubelets).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from bench.harness import workloads
from bench.harness.workloads import NodeLoss

TOLERATION_S, GRACE_S = 2, 3
REQUESTS = {"cpu": "100m", "memory": "256Mi"}


class Scenario(BaseModel):
    """`jobs` TFJobs of `ps` PS + `workers` workers on a cluster of `nodes` kwok nodes."""

    key: str
    title: str
    nodes: int = Field(ge=1)
    gpu_nodes: int = Field(ge=0)
    jobs: int = Field(ge=1)
    ps: int = Field(ge=0)
    workers: int = Field(ge=1)
    #: (f): how many nodes stop heart-beating (the one of PS 0 first, then workers' nodes).
    lost_nodes: int = 0
    #: Each phase (all Running, all done, replicas back) gives up after this long.
    timeout_s: float = 900.0

    @property
    def replicas(self) -> int:
        return self.ps + self.workers

    @property
    def pods(self) -> int:
        return self.jobs * self.replicas

    @property
    def node_loss(self) -> bool:
        return self.lost_nodes > 0

    def job_names(self) -> list[str]:
        return [f"scale-{self.key}-{i:03d}" for i in range(self.jobs)]


SCENARIOS_FULL: dict[str, Scenario] = {
    "d": Scenario(
        key="d",
        title="1 TFJob of 100 PS + 1,000 workers over 1,000 nodes",
        nodes=1000,
        gpu_nodes=100,
        jobs=1,
        ps=100,
        workers=1000,
        timeout_s=1800.0,
    ),
    "e": Scenario(
        key="e",
        title="100 TFJobs x 100 replicas (10 PS + 90 workers) at once, 10,000 pods",
        nodes=1000,
        gpu_nodes=100,
        jobs=100,
        ps=10,
        workers=90,
        timeout_s=3600.0,
    ),
    "f": Scenario(
        key="f",
        title="node loss: 1 TFJob of 4 PS + 196 workers (OnFailure), 5 of 1,000 nodes silent",
        nodes=1000,
        gpu_nodes=100,
        jobs=1,
        ps=4,
        workers=196,
        lost_nodes=5,
        timeout_s=150.0,
    ),
}

SCENARIOS_QUICK: dict[str, Scenario] = {
    "d": Scenario(
        key="d",
        title="1 TFJob of 10 PS + 100 workers over 100 nodes [quick]",
        nodes=100,
        gpu_nodes=10,
        jobs=1,
        ps=10,
        workers=100,
        timeout_s=600.0,
    ),
    "e": Scenario(
        key="e",
        title="10 TFJobs x 50 replicas (5 PS + 45 workers) at once, 500 pods [quick]",
        nodes=100,
        gpu_nodes=10,
        jobs=10,
        ps=5,
        workers=45,
        timeout_s=600.0,
    ),
    "f": Scenario(
        key="f",
        title="node loss: 1 TFJob of 2 PS + 38 workers (OnFailure), 3 of 100 nodes silent [quick]",
        nodes=100,
        gpu_nodes=10,
        jobs=1,
        ps=2,
        workers=38,
        lost_nodes=3,
        timeout_s=120.0,
    ),
}


def tfjob_manifest(name: str, namespace: str, scenario: Scenario) -> dict[str, Any]:
    """A kubeflow.org/v1 TFJob every contestant accepts (cleanPodPolicy written out), of the
    harness's one builder."""
    return workloads.tfjob_manifest(
        name,
        namespace,
        scenario.ps,
        scenario.workers,
        requests=REQUESTS,
        node_loss=NodeLoss(grace_s=GRACE_S, toleration_s=TOLERATION_S)
        if scenario.node_loss
        else None,
        clean_pod_policy="Running",
    )
