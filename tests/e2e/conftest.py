"""Fixtures for end-to-end tests on a real one-node cluster
(tools/taas_controlplane/cluster/cluster.py).

Everything is real: kubelet, containerd and runc run the pods, the CNI bridge gives them
addresses, kube-proxy carries ClusterIPs, CoreDNS answers service names, kube-router enforces
NetworkPolicies. Needs root (the cluster creates a bridge, namespaces, mounts, iptables rules);
without it the fixture fails with the reason. One cluster at a time (a machine-wide lock):
tests marked `own_cluster` start and stop their own and so run before the shared one is
started; tests marked `chart_lifecycle` install and uninstall the chart themselves and so run
before the session's operator (`operator`, the chart installed once) is installed; tests marked
`nodes3` run last, on a 3-node cluster: `cluster` is parametrized for them (3 nodes), so pytest
stops the one-node cluster (and the operator installed on it) before it starts the 3-node one,
as it does for any fixture whose parameter changes.

Images are the Dockerfile's, built for real (taas_controlplane.build.images) and imported into the
node's containerd; pods use them with `imagePullPolicy: Never` or `IfNotPresent`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from taas_controlplane.build.busybox_images import toolbox_archive
from taas_controlplane.build.images import ensure_image
from taas_controlplane.cluster.cluster import NODE_BINARIES, Cluster, ClusterError
from taas_controlplane.node.component_commands import NodeTimings
from tests.builds import needs
from tests.harness.real_cluster import OPERATOR_NS, RELEASE, SESSION_VALUES, helm, install_chart


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests marked `nodes3` get the 3-node `cluster` (its parameter: the number of nodes)."""
    if metafunc.definition.get_closest_marker("nodes3") and "cluster" in metafunc.fixturenames:
        metafunc.parametrize("cluster", [3], indirect=True, ids=["3-nodes"])


@pytest.hookimpl(trylast=True)  # after pytest's own reordering by fixture parameters
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Own-cluster tests first (the shared cluster holds the machine's cluster lock), then the
    chart's own install/uninstall (before the session's operator release exists), then the
    one-node tests, then the 3-node ones."""

    def rank(item: pytest.Item) -> int:
        if item.get_closest_marker("own_cluster"):
            return 0
        if item.get_closest_marker("nodes3"):
            return 3
        return 1 if item.get_closest_marker("chart_lifecycle") else 2

    # The hook sees the whole session: reorder only this directory's tests, in their places.
    here = Path(__file__).parent
    places = [i for i, item in enumerate(items) if here in Path(str(item.path)).parents]
    ordered = sorted((items[i] for i in places), key=rank)  # stable within each rank
    for place, item in zip(places, ordered, strict=True):
        items[place] = item


@pytest.fixture(scope="session")
@needs(*NODE_BINARIES, "helm")
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A running cluster (one node; 3 for tests marked `nodes3`) with the toolbox image loaded;
    stopped and cleaned at the end."""
    nodes = getattr(request, "param", 1)
    # Several nodes: a lost node NotReady in 20 s, not 40 (tests/e2e/test_node_loss.py).
    node = Cluster(nodes=nodes, node_timings=NodeTimings.fast() if nodes > 1 else None)
    try:
        node.start()
    except ClusterError as err:
        what = "one-node cluster" if nodes == 1 else f"{nodes}-node cluster"
        pytest.fail(f"cannot start the {what}: {err}", pytrace=False)
    try:
        node.load_image(toolbox_archive())
        yield node
    finally:
        node.stop()


@pytest.fixture(scope="session")
@needs(images=("operator",))
def operator_image(cluster: Cluster) -> str:
    """The Dockerfile's `operator` image, built once and loaded into the node: its reference."""
    image = ensure_image("operator")
    cluster.load_image(image.archive)
    return image.reference


@pytest.fixture(scope="session")
@needs(images=("trainer",))
def trainer_image(cluster: Cluster) -> str:
    """The Dockerfile's `trainer` image (the one the examples name), loaded into the node."""
    image = ensure_image("trainer")
    cluster.load_image(image.archive)
    return image.reference


@pytest.fixture(scope="session")
def operator(cluster: Cluster, operator_image: str) -> Iterator[str]:
    """The chart installed once (one replica, every namespace); yields its namespace. Progress
    is read every 5 s, not 30, so jobs of a few tens of seconds show theirs."""
    install_chart(cluster, *SESSION_VALUES)
    yield OPERATOR_NS
    helm(cluster, "uninstall", RELEASE, "--namespace", OPERATOR_NS, "--wait", check=False)


@pytest.fixture
def ns(cluster: Cluster) -> Iterator[str]:
    """A fresh namespace (deleted, with everything in it, afterwards)."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
