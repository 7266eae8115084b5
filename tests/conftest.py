"""Shared fixtures: one real kube-apiserver + etcd for the whole test session.

The control plane is real (built from Go modules, see tools/taas_controlplane). What does not run
is a kubelet, scheduler or controller-manager: pods stay Pending and tests write pod status
through the pods/status subresource themselves.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from taas_controlplane.launcher import ControlPlane


@pytest.fixture(scope="session")
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
