"""One node of a many-node cluster: its own network namespace, as a kind node is its container.

    ns = NodeNamespace(network, index, directory); ns.up(cni_conf_dir, ipam_dir)
    spawn(argv, namespaces=[ns.fd()])      # containerd, kubelet, kube-proxy, kube-router
    ns.run("iptables-save")                # a command in the namespace
    ns.down()

What `up()` makes, all inside the namespace except the veth's host end:
- the namespace itself, kept by a bind mount of its file under the run directory (`netns`), so
  the scrub's unmount of the run directory ends it (with every link, route, iptables rule,
  ipset and conntrack entry in it);
- a veth: `eth0` inside with the node IP on the node network, its peer on the host's bridge
  (host_network.py); no default route, so nothing in the namespace can reach beyond the bridge;
- the node's pod bridge (`cbr0`) with the first address of the node's pod range, its own
  `nf_call_iptables` (NetworkPolicy on bridged frames), forwarding on in the namespace only;
- static routes to every other node's pod range through that node's IP (what kindnet writes in
  a kind cluster), and the service range onto the pod bridge (as on one node);
- the CNI network of the node's pods (host_network.write_cni): routes to the service range and to
  the whole cluster's pod range through the pod bridge.

Processes share the host's mount namespace: every path a node writes is its own already
(kubelet's root, containerd's root/state/socket, CNI config and IPAM directories).
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
from pathlib import Path

from taas_controlplane.node.host_network import NetworkConfig, NetworkError, write_cni
from taas_controlplane.node.host_network import run as host_run

POD_BRIDGE = "cbr0"


class NodeNamespace:
    """The network namespace of node `index` and its links (see the module docstring)."""

    def __init__(self, network: NetworkConfig, index: int, directory: Path) -> None:
        self.network, self.index = network, index
        self.path = directory / "netns"
        self.host_link = f"{network.bridge}v{index}"

    @property
    def name(self) -> str:
        return self.network.node_name(self.index)

    @property
    def ip(self) -> str:
        return self.network.node_ip(self.index)

    @property
    def pod_cidr(self) -> str:
        return self.network.node_pod_cidr(self.index)

    @property
    def pod_gateway(self) -> str:
        return str(next(ipaddress.ip_network(self.pod_cidr).hosts()))

    def fd(self) -> int:
        """An open descriptor of the namespace (for `spawn(namespaces=...)`; the caller or
        spawn closes it)."""
        return os.open(self.path, os.O_RDONLY)

    def run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a command inside the namespace; raise NetworkError when it fails."""
        done = subprocess.run(
            ["nsenter", f"--net={self.path}", *cmd], capture_output=True, text=True, timeout=60
        )
        if check and done.returncode != 0:
            raise NetworkError(
                f"`{' '.join(cmd)}` in {self.name} failed: {(done.stderr or done.stdout).strip()}"
            )
        return done

    def up(self, cni_conf_dir: Path, ipam_dir: Path) -> None:
        net = self.network
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()
        host_run("unshare", f"--net={self.path}", "true")
        # The peer goes to this process's namespace (the host's), then onto the bridge.
        self.run("ip", "link", "add", "eth0", "type", "veth", "peer", "name", self.host_link,
                 "netns", str(os.getpid()))  # fmt: skip
        host_run("ip", "link", "set", self.host_link, "master", net.bridge, "up")
        prefix = ipaddress.ip_network(net.node_cidr).prefixlen
        cidr = ipaddress.ip_network(self.pod_cidr).prefixlen
        for cmd in (
            ["ip", "link", "set", "lo", "up"],
            ["ip", "addr", "add", f"{self.ip}/{prefix}", "dev", "eth0"],
            ["ip", "link", "set", "eth0", "up"],
            ["ip", "link", "add", POD_BRIDGE, "type", "bridge", "nf_call_iptables", "1"],
            ["ip", "addr", "add", f"{self.pod_gateway}/{cidr}", "dev", POD_BRIDGE],
            ["ip", "link", "set", POD_BRIDGE, "up"],
            ["ip", "route", "add", net.service_cidr, "dev", POD_BRIDGE, "src", self.pod_gateway],
            ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.disable_ipv6=1"],
        ):
            self.run(*cmd)
        for other in range(net.nodes):
            if other != self.index:
                self.run("ip", "route", "add", net.node_pod_cidr(other), "via",
                         net.node_ip(other), "dev", "eth0")  # fmt: skip
        write_cni(
            cni_conf_dir, ipam_dir, f"{net.network_name}-{self.index}", POD_BRIDGE,
            self.pod_cidr, [net.service_cidr, net.cluster_cidr],
        )  # fmt: skip

    def down(self) -> None:
        """Remove the namespace's file (the namespace ends with its last process) and the
        veth's host end; each step ignores what is already gone."""
        subprocess.run(["umount", str(self.path)], capture_output=True)
        subprocess.run(["ip", "link", "delete", self.host_link], capture_output=True)
