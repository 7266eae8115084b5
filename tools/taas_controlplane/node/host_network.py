"""The cluster's bridge on the host: the pod network of one node (or the node network of several),
its guard rules and the CNI config.

    net = NodeNetwork(NetworkConfig(...)); net.up(cni_conf_dir, ipam_dir); ...; net.down()

What it sets up, and why each piece keeps every packet on this machine:
- a Linux bridge (`NetworkConfig.bridge`) holding the gateway address of the pod range; the
  CNI `bridge` plugin attaches each pod's veth to it, `host-local` hands out addresses;
  `ipMasq: false` (no NAT of pod traffic) and `isGateway: false`, because the bridge plugin
  turns on the host-wide `net.ipv4.ip_forward` for a gateway bridge;
- pods get routes only to the pod range (on-link) and to the service range (through the
  bridge address, where kube-proxy's DNAT turns a ClusterIP into a pod or the bridge address),
  no default route;
- forwarding is switched on for the bridge alone (`net.ipv4.conf.<bridge>.forwarding`: Linux
  decides by the interface a packet came in on), so routed service traffic between pods works
  while the host's other interfaces stay as they were;
- the bridge's own `nf_call_iptables`, so bridged pod-to-pod frames pass iptables (kube-proxy's
  replies and the NetworkPolicy enforcer need that) without the host-wide br_netfilter sysctl;
- a guard chain (`TAAS-GUARD-<bridge>`, first in FORWARD and INPUT) that only drops: anything
  from the bridge to another interface, anything into the bridge from another interface, and
  anything from the bridge to a host address other than the bridge's;
- a route for the service range onto the bridge, so a ClusterIP the host sends to before
  kube-proxy has a rule for it never follows the default route off the machine.

With several nodes (`NetworkConfig.nodes`) the bridge is the node network instead: the host's
address, the same guard, no forwarding and no iptables for bridged frames (nodes talk across
it at layer 2), routes to each node's pod range through the node and to the service range
through node 0; the pods' bridges live in the nodes' namespaces (namespace.py).

`down()` removes all of it; deleting the bridge removes its sysctls, addresses and routes.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
from pathlib import Path

from pydantic import BaseModel

GUARD_PREFIX = "TAAS-GUARD-"


class NetworkError(RuntimeError):
    """A network command failed; the message has the command and its output."""


class NetworkConfig(BaseModel):
    """The cluster's own address ranges and bridge name.

    One node (`nodes` 1): the bridge is the pod network, its address (`gateway`) the node IP
    and the control plane's. More nodes: the bridge is the node network (`node_cidr`), its
    address the control plane's, node `i` has the address `node_ip(i)` on it from its own
    network namespace and the pod range `node_pod_cidr(i)` (a /24 of `cluster_cidr`) on a
    bridge of its own there (namespace.py).
    """

    bridge: str = "taas0"
    pod_cidr: str = "10.244.0.0/24"
    service_cidr: str = "10.96.0.0/24"
    cluster_domain: str = "cluster.local"
    nodes: int = 1
    cluster_cidr: str = "10.244.0.0/16"
    node_cidr: str = "10.245.0.0/24"

    @property
    def gateway(self) -> str:
        """The first address of the pod range (one node: the bridge's, the node IP)."""
        return str(next(ipaddress.ip_network(self.pod_cidr).hosts()))

    @property
    def host_address(self) -> str:
        """The host's address on the bridge: where the apiserver and CoreDNS listen."""
        if self.nodes == 1:
            return self.gateway
        return str(next(ipaddress.ip_network(self.node_cidr).hosts()))

    @property
    def pods_cidr(self) -> str:
        """The range every pod of the cluster gets its address from."""
        return self.pod_cidr if self.nodes == 1 else self.cluster_cidr

    def node_name(self, index: int) -> str:
        return "taas-node" if self.nodes == 1 else f"taas-node-{index}"

    def node_ip(self, index: int) -> str:
        """Node `index`'s address (one node: the bridge's; more: on the node network)."""
        if self.nodes == 1:
            return self.gateway
        return str(ipaddress.ip_network(self.node_cidr)[2 + index])

    def node_pod_cidr(self, index: int) -> str:
        """Node `index`'s pod range (one node: `pod_cidr`; more: the index-th /24)."""
        if self.nodes == 1:
            return self.pod_cidr
        return str(list(ipaddress.ip_network(self.cluster_cidr).subnets(new_prefix=24))[index])

    def service_ip(self, offset: int) -> str:
        """The `offset`-th address of the service range (1: `kubernetes`, 10: `kube-dns`)."""
        return str(ipaddress.ip_network(self.service_cidr)[offset])

    @property
    def network_name(self) -> str:
        """The CNI network's name (also the prefix of its cache files in /var/lib/cni)."""
        return f"taas-{self.bridge}"

    @property
    def guard_chain(self) -> str:
        return GUARD_PREFIX + self.bridge


def run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a host networking command; raise NetworkError with its output when it fails."""
    done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)
    if check and done.returncode != 0:
        raise NetworkError(f"`{' '.join(cmd)}` failed: {(done.stderr or done.stdout).strip()}")
    return done


def _sysctl(path: str, value: str) -> None:
    Path("/proc/sys", path).write_text(value)


class NodeNetwork:
    """Create and remove the bridge, its guard rules and the CNI configuration."""

    def __init__(self, config: NetworkConfig) -> None:
        self.config = config

    def exists(self) -> bool:
        return run("ip", "link", "show", self.config.bridge, check=False).returncode == 0

    def up(self, cni_conf_dir: Path, ipam_dir: Path) -> None:
        cfg = self.config
        if self.exists():
            raise NetworkError(
                f"a link named {cfg.bridge} already exists: another TaaS cluster runs here, or "
                f"one was not stopped (`ip link delete {cfg.bridge}` after checking)."
            )
        if cfg.nodes > 1:
            self._node_network_up()
            return
        prefix = ipaddress.ip_network(cfg.pod_cidr).prefixlen
        run("ip", "link", "add", cfg.bridge, "type", "bridge", "nf_call_iptables", "1")
        _sysctl(f"net/ipv6/conf/{cfg.bridge}/disable_ipv6", "1")
        _sysctl(f"net/ipv4/conf/{cfg.bridge}/forwarding", "1")
        run("ip", "addr", "add", f"{cfg.gateway}/{prefix}", "dev", cfg.bridge)
        run("ip", "link", "set", cfg.bridge, "up")
        run("ip", "route", "add", cfg.service_cidr, "dev", cfg.bridge, "src", cfg.gateway)
        self._guard_up()
        self._write_cni(cni_conf_dir, ipam_dir)

    def down(self) -> None:
        """Remove the guard rules and the bridge (each step ignores what is already gone)."""
        self._guard_down()
        if self.exists():
            run("ip", "link", "delete", self.config.bridge, check=False)

    # -- internals ---------------------------------------------------------------------------
    def _node_network_up(self) -> None:
        """The bridge the nodes' namespaces hang on: the host's address, the guard, and routes
        to each node's pod range (replies to pods, from the apiserver and CoreDNS) and to the
        service range through node 0 (its kube-proxy), all on the bridge. Frames between nodes
        are bridged, never routed by the host, and skip the host's iptables."""
        cfg = self.config
        prefix = ipaddress.ip_network(cfg.node_cidr).prefixlen
        run("ip", "link", "add", cfg.bridge, "type", "bridge", "nf_call_iptables", "0")
        _sysctl(f"net/ipv6/conf/{cfg.bridge}/disable_ipv6", "1")
        run("ip", "addr", "add", f"{cfg.host_address}/{prefix}", "dev", cfg.bridge)
        run("ip", "link", "set", cfg.bridge, "up")
        for index in range(cfg.nodes):
            run("ip", "route", "add", cfg.node_pod_cidr(index), "via", cfg.node_ip(index),
                "dev", cfg.bridge)  # fmt: skip
        run("ip", "route", "add", cfg.service_cidr, "via", cfg.node_ip(0), "dev", cfg.bridge)
        self._guard_up()

    def _guard_up(self) -> None:
        cfg, chain = self.config, self.config.guard_chain
        run("iptables", "-w", "-N", chain)
        rules = [
            ["-i", cfg.bridge, "!", "-o", cfg.bridge],
            ["-o", cfg.bridge, "!", "-i", cfg.bridge],
        ]
        for rule in rules:
            run("iptables", "-w", "-A", chain, *rule, "-j", "DROP")
        run("iptables", "-w", "-I", "FORWARD", "1", "-j", chain)
        # INPUT: from the bridge, only the bridge's own address is a target on the host.
        run(
            "iptables", "-w", "-I", "INPUT", "1", "-i", cfg.bridge, "!", "-d", cfg.host_address,
            "-j", "DROP",
        )  # fmt: skip

    def _guard_down(self) -> None:
        cfg, chain = self.config, self.config.guard_chain
        while run("iptables", "-w", "-D", "FORWARD", "-j", chain, check=False).returncode == 0:
            pass
        drop_input = ("-i", cfg.bridge, "!", "-d", cfg.host_address, "-j", "DROP")
        while run("iptables", "-w", "-D", "INPUT", *drop_input, check=False).returncode == 0:
            pass
        run("iptables", "-w", "-F", chain, check=False)
        run("iptables", "-w", "-X", chain, check=False)

    def _write_cni(self, conf_dir: Path, ipam_dir: Path) -> None:
        cfg = self.config
        write_cni(conf_dir, ipam_dir, cfg.network_name, cfg.bridge, cfg.pod_cidr,
                  [cfg.service_cidr])  # fmt: skip


def write_cni(
    conf_dir: Path, ipam_dir: Path, name: str, bridge: str, subnet: str, routed: list[str]
) -> None:
    """The CNI network of a node's pods: `bridge`, addresses from `subnet` (its first is the
    gateway), no masquerading, routes to the `routed` ranges through the gateway."""
    gateway = str(next(ipaddress.ip_network(subnet).hosts()))
    conf_dir.mkdir(parents=True, exist_ok=True)
    conflist = {
        "cniVersion": "0.4.0",
        "name": name,
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge,
                "isGateway": False,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(ipam_dir),
                    "ranges": [[{"subnet": subnet, "gateway": gateway}]],
                    "routes": [{"dst": dst, "gw": gateway} for dst in routed],
                },
            }
        ],
    }
    (conf_dir / "10-taas.conflist").write_text(json.dumps(conflist, indent=2))
