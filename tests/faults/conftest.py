"""Fixtures for the fault runs: a fresh control plane per test and a real TaaS operator process.

Real: etcd + kube-apiserver (own instance per test, since tests stop the apiserver), the TaaS
operator (`python -m taas_operator.controller`, the code of `taas operator`) as a separate
process that tests SIGKILL. Not real (cannot exist here): kubelets. Pods stay unscheduled and the
tests write their phases through the pods/status subresource, as a kubelet would.

Sizes: the default run is CI-sized. The long versions (`slow` marker: 200 jobs, 500 malformed
TFJobs) are deselected unless asked for: `python -m pytest tests/faults -m slow`,
`TAAS_FAULTS_LONG=1`, or the test id named on the command line. The operator harness comes
from bench/operator (`bench.harness.controllers`; the repository root is on pytest's
pythonpath).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.harness.controllers import (
    CONTROLLER_GROUPS,
    CONTROLLER_USER,
    TAAS_CRD,
    RunningController,
    apply_crd,
    wait_alive,
)
from bench.harness.controllers import CONTROLLERS as _CONTROLLERS
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from tests.builds import needs

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the long (`slow`) fault runs unless `-m` or TAAS_FAULTS_LONG asks for them."""
    if config.getoption("-m") or os.environ.get("TAAS_FAULTS_LONG") == "1":
        return
    if any("::" in arg for arg in config.args):  # a test named on the command line runs
        return
    keep, drop = [], []
    for item in items:
        is_fault = HERE in Path(str(item.fspath)).resolve().parents
        (drop if is_fault and item.get_closest_marker("slow") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture
@needs("etcd", "kube-apiserver")
def fault_plane() -> Iterator[ControlPlane]:
    """A fresh etcd + kube-apiserver with TaaS's TFJob CRD, for this test alone."""
    plane = ControlPlane(directory=Path(tempfile.mkdtemp(prefix="taas-fault-")))
    plane.start()
    try:
        apply_crd(plane, TAAS_CRD)
        yield plane
    finally:
        plane.stop(remove=False)
        import shutil

        shutil.rmtree(plane.directory, ignore_errors=True)


@pytest.fixture
def start_operator(
    fault_plane: ControlPlane, tmp_path: Path
) -> Iterator[Callable[[], RunningController]]:
    """`start_operator()` starts a TaaS operator process (own process group) on the plane;
    every one started is stopped (SIGTERM, then SIGKILL) when the test ends."""
    started: list[RunningController] = []
    kubeconfig = fault_plane.kubeconfig_for(CONTROLLER_USER, CONTROLLER_GROUPS)

    def start() -> RunningController:
        running = _CONTROLLERS["taas"].start(kubeconfig, tmp_path / f"operator-{len(started)}")
        started.append(running)
        wait_alive(running, 1.0)
        return running

    try:
        yield start
    finally:
        for running in started:
            running.stop()
