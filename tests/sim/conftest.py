"""Fixtures for the simulated-cluster scenarios: one SimCluster for the session and the real
TaaS operator on it.

Real: etcd, kube-apiserver, kube-scheduler, kube-controller-manager (node lifecycle, garbage
collector, ...), the TaaS operator process (`python -m taas_operator.controller`, what `taas
operator` runs, unchanged, default flags). Simulated: the kubelets, by kwok
(taas_controlplane.sim: its stages move pods Pending -> Running and end their containers with
the exit code a pod annotation names). Sizes are CI-sized (20 nodes, hundreds of pods); the
full-size runs belong to a bench.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness.controllers import (
    CONTROLLER_GROUPS,
    CONTROLLER_USER,
    CONTROLLERS,
    TAAS_CRD,
    RunningController,
    apply_crd,
    wait_alive,
)
from taas_controlplane.sim.cluster import SIM_BINARIES, SimCluster
from tests.builds import needs

NODES, GPU_NODES = 20, 4


class OperatorHandle:
    """The one TaaS operator of the session; a test may SIGKILL it and start another."""

    def __init__(self, sim: SimCluster, workdir: Path) -> None:
        self.kubeconfig = sim.plane.kubeconfig_for(CONTROLLER_USER, CONTROLLER_GROUPS)
        self.workdir = workdir
        self.started: list[RunningController] = []

    @property
    def current(self) -> RunningController:
        return self.started[-1]

    def start(self) -> RunningController:
        running = CONTROLLERS["taas"].start(
            self.kubeconfig, self.workdir / f"operator-{len(self.started)}"
        )
        self.started.append(running)
        wait_alive(running, 1.0)
        return running

    def stop_all(self) -> None:
        for running in self.started:
            running.stop()


@pytest.fixture(scope="session")
@needs(*SIM_BINARIES)
def sim() -> Iterator[SimCluster]:
    """20 kwok nodes (4 with 8 nvidia.com/gpu each) behind the real control plane, with TaaS's
    TFJob CRD."""
    cluster = SimCluster(nodes=NODES, gpu_nodes=GPU_NODES)
    cluster.start()
    try:
        apply_crd(cluster.plane, TAAS_CRD)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def operator(sim: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorHandle]:
    handle = OperatorHandle(sim, tmp_path_factory.mktemp("sim-operator"))
    handle.start()
    try:
        yield handle
    finally:
        handle.stop_all()
