"""The simulated cluster's pure parts: the Node objects it makes, the pod annotations, the CLI's
refusal of impossible sizes. No processes."""

from __future__ import annotations

import ipaddress

import pytest
import yaml

from taas_controlplane.__main__ import main
from taas_controlplane.sim.annotations import EXIT_CODE, RUN_SECONDS, container_plan
from taas_controlplane.sim.cluster import STAGES
from taas_controlplane.sim.node_objects import KWOK_LABEL, node_manifests

pytestmark = pytest.mark.fast


def test_nodes_have_capacity_gpus_and_their_own_pod_cidr() -> None:
    nodes = node_manifests(300, gpu_nodes=2)
    assert len(nodes) == 300
    names = [n["metadata"]["name"] for n in nodes]
    assert names[:2] == ["sim-node-0000", "sim-node-0001"] and len(set(names)) == 300
    assert all(n["metadata"]["labels"][KWOK_LABEL] == "fake" for n in nodes)
    assert all("taints" not in n["spec"] for n in nodes)
    gpu = [n for n in nodes if "nvidia.com/gpu" in n["status"]["capacity"]]
    assert [n["metadata"]["name"] for n in gpu] == names[:2]
    assert gpu[0]["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert nodes[5]["status"]["capacity"] == {
        "cpu": "32",
        "memory": "256Gi",
        "pods": "110",
        "ephemeral-storage": "500Gi",
    }
    cidrs = [ipaddress.ip_network(n["spec"]["podCIDR"]) for n in nodes]
    assert len(set(cidrs)) == 300 and all(c.prefixlen == 24 for c in cidrs)
    assert all(c.subnet_of(ipaddress.ip_network("10.64.0.0/10")) for c in cidrs)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "0"], "--nodes must be between 1 and 16384 (got 0)"),
        (["--nodes", "3", "--gpu-nodes", "4"], "--gpu-nodes must be between 0 and --nodes (3)"),
    ],
)
def test_sim_up_refuses_impossible_sizes_with_a_message(args, message, capsys) -> None:
    assert main(["sim", "up", *args]) == 2
    assert message in capsys.readouterr().err


def test_container_plan_and_the_stages_file() -> None:
    assert container_plan(exit_code=137, run_seconds=2.5) == {
        EXIT_CODE: "137",
        RUN_SECONDS: "2.500",
    }
    assert container_plan() == {}
    with pytest.raises(ValueError, match=r"exit_code must be 0\.\.255"):
        container_plan(exit_code=256)
    stages = [doc["metadata"]["name"] for doc in yaml.safe_load_all(STAGES.read_text())]
    assert stages == [
        "node-initialize",
        "node-heartbeat-with-lease",
        "pod-start",
        "pod-exit",
        "pod-restart-in-place",
        "pod-delete",
    ]
