"""`taas-controlplane cluster up` refuses clearly, before touching the host, where it cannot run.

Not being root is simulated (os.geteuid patched): this machine's Python lives under /root
(mode 0700), so no other user can run it here; everything else is the real command.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from taas_controlplane.__main__ import main
from taas_controlplane.node.host_network import NetworkConfig


def _bridge_exists(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


def test_cluster_up_without_root_says_so_and_creates_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    existed = _bridge_exists("taas0")
    run_dirs = set(Path("/tmp").glob("taas-node-*"))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert main(["cluster", "up"]) == 1
    err = capsys.readouterr().err
    assert "needs root" in err and "sudo" in err
    assert "Traceback" not in err
    assert _bridge_exists("taas0") == existed
    assert set(Path("/tmp").glob("taas-node-*")) == run_dirs


@pytest.mark.parametrize("nodes", ["0", "-1", "9"])
def test_cluster_up_with_a_node_count_out_of_range_says_so_and_creates_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], nodes: str
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)  # past the root check, as `sudo` would be
    existed = _bridge_exists("taas0")
    run_dirs = set(Path("/tmp").glob("taas-node-*"))
    assert main(["cluster", "up", "--nodes", nodes]) == 1
    err = capsys.readouterr().err
    assert "--nodes must be between 1 and 8" in err and f"(got {nodes})" in err, err
    assert "Traceback" not in err
    assert _bridge_exists("taas0") == existed
    assert set(Path("/tmp").glob("taas-node-*")) == run_dirs


def test_node_addresses_and_pod_ranges() -> None:
    one, three = NetworkConfig(), NetworkConfig(nodes=3)
    assert (one.node_name(0), one.node_ip(0), one.node_pod_cidr(0)) == (
        "taas-node", "10.244.0.1", "10.244.0.0/24",
    )  # fmt: skip
    assert one.host_address == one.gateway and one.pods_cidr == one.pod_cidr
    assert three.host_address == "10.245.0.1" and three.pods_cidr == "10.244.0.0/16"
    assert [three.node_name(i) for i in range(3)] == [f"taas-node-{i}" for i in range(3)]
    assert [three.node_ip(i) for i in range(3)] == ["10.245.0.2", "10.245.0.3", "10.245.0.4"]
    assert [three.node_pod_cidr(i) for i in range(3)] == [f"10.244.{i}.0/24" for i in range(3)]
