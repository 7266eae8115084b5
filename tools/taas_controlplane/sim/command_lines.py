"""Command lines of the simulated cluster's processes beside etcd and kube-apiserver.

    Timings.for_tests() / Timings.defaults()    # node-failure timings (docs/simulated-cluster.md)
    scheduler(binary, kubeconfig, port) -> list[str]
    controller_manager(binary, kubeconfig, port, ca_file, timings) -> list[str]
    kwok(binary, kubeconfig, config, timings) -> list[str]

kube-scheduler and kube-controller-manager are the upstream binaries with their default
settings (client QPS included) except: no leader election, serving only on 127.0.0.1, and the
node-failure timings of `Timings`. kwok manages only the nodes labelled
`kwok.x-k8s.io/node=fake` (node_objects.py), plays the Stages of stages.yaml and serves nothing (no
--server-address: no logs/exec of fake pods, nothing listening).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from taas_controlplane.sim.node_objects import KWOK_LABEL, KWOK_VALUE


class Timings(BaseModel):
    """How fast a node that stops heart-beating is noticed and its pods evicted.

    Kubernetes' defaults (1.34): a kubelet renews its Lease every 10 s (duration 40 s); the node
    lifecycle controller checks every 5 s and marks a node Unknown (NotReady) 50 s after its
    last renewal, tainting it `node.kubernetes.io/unreachable:NoExecute`; pods tolerate that
    taint for 300 s (the apiserver's DefaultTolerationSeconds), then are evicted.
    """

    lease_duration_seconds: int = 40
    node_monitor_period: str = "5s"
    node_monitor_grace_period: str = "50s"
    node_startup_grace_period: str = "1m0s"

    @classmethod
    def defaults(cls) -> Timings:
        return cls()

    @classmethod
    def for_tests(cls) -> Timings:
        """Shortened: a lost node is NotReady about 10 s after its last lease renewal."""
        return cls(
            lease_duration_seconds=8,  # renewed every 2 s
            node_monitor_period="1s",
            node_monitor_grace_period="10s",
            node_startup_grace_period="20s",
        )


def scheduler(binary: Path, kubeconfig: str, port: int) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--leader-elect=false",
        "--v=1",
    ]


def controller_manager(
    binary: Path, kubeconfig: str, port: int, ca_file: str, timings: Timings
) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--leader-elect=false",
        "--use-service-account-credentials=true",
        f"--root-ca-file={ca_file}",
        # Every default controller: node lifecycle (NotReady, taints, eviction), garbage
        # collector, pod GC (pods of deleted nodes), namespace, service accounts, ...
        "--controllers=*",
        f"--node-monitor-period={timings.node_monitor_period}",
        f"--node-monitor-grace-period={timings.node_monitor_grace_period}",
        f"--node-startup-grace-period={timings.node_startup_grace_period}",
        "--v=1",
    ]


def kwok(binary: Path, kubeconfig: str, config: Path, timings: Timings) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--config={config}",
        f"--manage-nodes-with-label-selector={KWOK_LABEL}={KWOK_VALUE}",
        f"--node-lease-duration-seconds={timings.lease_duration_seconds}",
    ]
