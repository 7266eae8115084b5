"""Fixtures for end-to-end tests on a real one-node cluster (tools/taas_controlplane/cluster.py).

Everything is real: kubelet, containerd and runc run the pods, the CNI bridge gives them
addresses, kube-proxy carries ClusterIPs, CoreDNS answers service names, kube-router enforces
NetworkPolicies. Needs root (the cluster creates a bridge, namespaces, mounts, iptables rules);
without it the fixture fails with the reason. One cluster per session: tests marked
`own_cluster` start and stop their own and so run before the shared one is started.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from taas_controlplane.cluster import Cluster, ClusterError
from taas_controlplane.oci import toolbox_archive


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests with their own cluster first: the shared one holds the machine's cluster lock."""
    own = [item for item in items if item.get_closest_marker("own_cluster")]
    if own:
        items[:] = own + [item for item in items if item not in own]


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """A running one-node cluster with the toolbox image loaded; stopped and cleaned at the end."""
    node = Cluster()
    try:
        node.start()
    except ClusterError as err:
        pytest.fail(f"cannot start the one-node cluster: {err}", pytrace=False)
    try:
        node.load_image(toolbox_archive())
        yield node
    finally:
        node.stop()


@pytest.fixture
def ns(cluster: Cluster) -> Iterator[str]:
    """A fresh namespace (deleted, with everything in it, afterwards)."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def get_json(cluster: Cluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def wait_for(
    what: str, probe: Callable[[], Any], timeout: float = 120.0, every: float = 1.0
) -> Any:
    """Call `probe` until it returns something truthy; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def exec_in(
    cluster: Cluster, ns: str, pod: str, script: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run a shell script in a pod's container (kubectl exec, through kubelet)."""
    return cluster.kubectl("exec", "-n", ns, pod, "--", "sh", "-c", script, check=check)
