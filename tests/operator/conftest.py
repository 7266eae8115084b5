"""Fixtures for the operator tests: the TFJob CRD installed, an admin client, operators to start.

Real: kube-apiserver + etcd (tests/conftest.py), the operator as a subprocess (`taas operator`),
RBAC. Not running: kubelet, scheduler, garbage collector. Tests write pod status themselves
(pods/status subresource) and never rely on owner references cascading.
Each module starts its own operator(s) watching namespaces made for it, so jobs left behind by
other test modules (no namespace controller deletes them) are never touched.

The fast tier's fixtures (`fake_admin`, `start_fake_operator`): the same vocabulary on the
in-memory apiserver (`tests.harness.fakeapi`), one per test, with the operator's Controller in
this process (`fake_operator`); for the reconcile logic, not for what the apiserver decides.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from taas_controlplane.cluster.scheduling.coscheduling import (
    PODGROUP_CRD,
    crd_files,
    scheduler_plugins_source,
)
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from tests.crds import install_crd
from tests.harness.fakeapi import Store
from tests.harness.operator_run import Api, OperatorProcess, StartOperator, launch_operator
from tests.operator.fake_operator import FakeCluster

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml"


@pytest.fixture(scope="session")
def tfjob_crd(control_plane: ControlPlane) -> Path:
    """The TFJob CRD applied and Established."""
    install_crd(control_plane, CRD)
    return CRD


@pytest.fixture(scope="session")
def podgroup_crd(control_plane: ControlPlane) -> Path:
    """scheduler-plugins' PodGroup CRD (gang scheduling), from its Go module, Established."""
    crd = crd_files(scheduler_plugins_source())[0]
    install_crd(control_plane, crd, name=PODGROUP_CRD)
    return crd


@pytest.fixture(scope="session")
def admin(control_plane: ControlPlane, tfjob_crd: Path) -> Api:
    """JSON client with the admin (system:masters) identity."""
    return Api(control_plane.kubeconfig)


@pytest.fixture(scope="module")
def start_operator(
    control_plane: ControlPlane, tfjob_crd: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StartOperator]:
    """`start_operator(ns, ..., args=[...], kubeconfig=None)` -> a started OperatorProcess.

    Every operator started through it is stopped (SIGTERM, then SIGKILL) when the module ends.
    """
    started: list[OperatorProcess] = []
    logs = tmp_path_factory.mktemp("operator-logs")

    def start(
        *namespaces: str,
        args: tuple[str, ...] = (),
        kubeconfig: str | None = None,
        env: dict[str, str] | None = None,
    ) -> OperatorProcess:
        flags = [f"--namespace={ns}" for ns in namespaces] or ["--all-namespaces"]
        flags += ["--kubeconfig", kubeconfig or control_plane.kubeconfig, *args]
        if not any(a.startswith("--health-port") for a in args):
            flags.append("--health-port=0")
        if not any(a.startswith("--metrics-port") for a in args):
            flags.append("--metrics-port=0")  # several operators run at once: no fixed port
        proc = launch_operator(flags, logs / f"operator-{len(started)}.log", env)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture(scope="module")
def module_fake_cluster() -> Iterator[FakeCluster]:
    """An in-memory apiserver (scheduler-plugins' PodGroups served) for a whole module, which
    overrides `admin` and `start_operator` with its `admin` and `start_operator`."""
    cluster = FakeCluster(Store(pod_groups=True))
    yield cluster
    cluster.stop()


@pytest.fixture
def fake_cluster() -> Iterator[FakeCluster]:
    """An empty in-memory apiserver of its own per test; its operators stopped at the end."""
    cluster = FakeCluster()
    yield cluster
    cluster.stop()


@pytest.fixture
def fake_admin(fake_cluster: FakeCluster) -> Api:
    """`admin`'s vocabulary on the in-memory apiserver."""
    return fake_cluster.admin


@pytest.fixture
def start_fake_operator(fake_cluster: FakeCluster) -> StartOperator:
    """`start_fake_operator(ns, ..., args=[...])` -> a started `InProcessOperator` on the
    in-memory apiserver (`start_operator`'s flags)."""
    return fake_cluster.start_operator  # type: ignore[return-value]
