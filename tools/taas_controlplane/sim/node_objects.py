"""The simulated nodes as Node objects: names, capacity, addresses, pod CIDRs.

    node_manifests(nodes, gpu_nodes) -> list[dict]     # what SimCluster creates
    NodeShape(cpu, memory, pods, gpus)                 # one node's capacity

Every node carries the label kwok manages (`kwok.x-k8s.io/node: fake`; a label, not kwok's
usual annotation, because a watch by label selector tells kwok when a node stops matching, which
`SimCluster.stop_heartbeat` relies on) and the label `type: kwok`; no taint, so a TFJob's
pods land on them unchanged. The first `gpu_nodes` of them also carry `nvidia.com/gpu` (8
each, as a DGX-class machine has) and the label `nvidia.com/gpu.present: "true"`. Each node
gets its own /24 pod CIDR (10.64.0.0/10 holds 16,384 of them), from which kwok gives its pods
their IPs, and an InternalIP in 10.192.0.0/10. Capacity equals allocatable (no system
reservations): the scheduler sees the whole node.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pydantic import BaseModel

#: The label kwok is started to manage (`--manage-nodes-with-label-selector`).
KWOK_LABEL = "kwok.x-k8s.io/node"
KWOK_VALUE = "fake"
NODE_PREFIX = "sim-node-"
GPU_RESOURCE = "nvidia.com/gpu"
_POD_NETWORK = ipaddress.ip_network("10.64.0.0/10")
_NODE_NETWORK = ipaddress.ip_network("10.192.0.0/10")
MAX_NODES = 2 ** (24 - _POD_NETWORK.prefixlen)


class NodeShape(BaseModel):
    """The capacity of one simulated node."""

    cpu: str = "32"
    memory: str = "256Gi"
    pods: int = 110  # the kubelet's default maxPods
    gpus: int = 0

    def resources(self) -> dict[str, str]:
        found = {"cpu": self.cpu, "memory": self.memory, "pods": str(self.pods)}
        found["ephemeral-storage"] = "500Gi"
        if self.gpus:
            found[GPU_RESOURCE] = str(self.gpus)
        return found


CPU_NODE = NodeShape()
GPU_NODE = NodeShape(cpu="64", memory="512Gi", gpus=8)


def node_name(index: int) -> str:
    return f"{NODE_PREFIX}{index:04d}"


def node_manifest(index: int, shape: NodeShape) -> dict[str, Any]:
    """One Node object, status included (the apiserver keeps a new Node's status)."""
    if not 0 <= index < MAX_NODES:
        raise ValueError(f"node index {index} out of range: at most {MAX_NODES} nodes")
    name = node_name(index)
    pod_cidr = str(ipaddress.ip_network((int(_POD_NETWORK.network_address) + (index << 8), 24)))
    address = str(_NODE_NETWORK.network_address + index + 1)
    labels = {
        "type": "kwok",
        KWOK_LABEL: KWOK_VALUE,
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node-role.kubernetes.io/sim": "",
    }
    if shape.gpus:
        labels["nvidia.com/gpu.present"] = "true"
    resources = shape.resources()
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
        },
        "spec": {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "addresses": [
                {"type": "InternalIP", "address": address},
                {"type": "Hostname", "address": name},
            ],
        },
    }


def node_manifests(nodes: int, gpu_nodes: int = 0) -> list[dict[str, Any]]:
    """`nodes` Node objects, the first `gpu_nodes` of them with GPUs."""
    if nodes < 1 or nodes > MAX_NODES:
        raise ValueError(f"--nodes must be between 1 and {MAX_NODES} (got {nodes})")
    if gpu_nodes < 0 or gpu_nodes > nodes:
        raise ValueError(f"--gpu-nodes must be between 0 and --nodes ({nodes}); got {gpu_nodes}")
    return [node_manifest(i, GPU_NODE if i < gpu_nodes else CPU_NODE) for i in range(nodes)]
