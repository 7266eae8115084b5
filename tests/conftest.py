"""Shared fixtures: one real kube-apiserver + etcd for the whole test session.

The control plane is real (built from Go modules, see tools/taas_controlplane). What does not run
is a kubelet, scheduler or controller-manager: pods stay Pending and tests write pod status
through the pods/status subresource themselves.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from tests import builds

HERE = Path(__file__).resolve().parent
#: Folders whose every test is pure (no apiserver, no process of TaaS's, no TensorFlow): all in
#: the fast tier (`-m fast`) but for their long `slow` versions. Elsewhere tests are marked one
#: by one.
FAST_FOLDERS = (HERE / "core", HERE / "documents")
#: What the fast tier never holds.
HEAVY = ("controlplane", "tensorflow", "slow", "node", "sim", "own_cluster", "nodes3")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of FAST_FOLDERS `fast` (before `-m` selects); refuse a test marked both
    `fast` and one of HEAVY (a fast module's test that needs more is marked one by one)."""
    for item in items:
        if item.path.parent in FAST_FOLDERS and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.fast)
        heavy = [name for name in HEAVY if item.get_closest_marker(name)]
        if heavy and item.get_closest_marker("fast"):
            raise pytest.UsageError(f"{item.nodeid} is marked fast and {', '.join(heavy)}")


class _HeaviestLast:
    """The simulated-cluster tests, then the node tests, run last (each group in its own
    order): they need the most binaries, which CI builds in that order while the first tests
    run (.ci/run). Before them, the other tests by the latest CI build they need
    (`builds.order`), e.g. Kueue's after the registry's."""

    @pytest.hookimpl(trylast=True)  # after the folders' own orderings, which this one keeps
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        def rank(item: pytest.Item) -> int:
            if item.get_closest_marker("node"):
                return 2
            return 1 if item.get_closest_marker("sim") else 0

        items[:] = sorted(items, key=rank)  # stable
        for item in items:
            builds.needed(item)  # a `builds` marker naming no binary is refused here
        first = [item for item in items if rank(item) == 0]
        builds.order(first)
        items[: len(first)] = first


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_HeaviestLast(), "taas-heaviest-last")
    config.pluginmanager.register(builds.BuildsFirst(config), "taas-builds-first")


@pytest.fixture(scope="session")
@builds.needs("etcd", "kube-apiserver")
def control_plane() -> Iterator[ControlPlane]:
    """A running etcd + kube-apiserver; `.kubeconfig` is an admin (system:masters)."""
    plane = ControlPlane()
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def namespace(control_plane: ControlPlane) -> Iterator[str]:
    """A fresh namespace for one test (deleted afterwards; no namespace controller runs, so
    its objects stay in etcd, which is harmless for a throw-away control plane)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    control_plane.kubectl("create", "namespace", name)
    yield name
    control_plane.kubectl("delete", "namespace", name, "--wait=false", check=False)
