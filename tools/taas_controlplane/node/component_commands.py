"""Command lines and configuration files of the node's components, one function each.

    NodeContext(...)                       # directories, addresses, ports, kubeconfigs of a run
    controller_manager(ctx) / scheduler(ctx) / kubelet(ctx) / kube_proxy(ctx) / coredns(ctx)
    / kube_router(ctx) -> Component        # argv (+ the files it reads, written on the spot)

Every listener is on loopback or on the bridge address (a node's own address in a many-node
cluster), never on all interfaces; every directory a component writes is under the run's
directory (kubelet's root, pod logs, CNI state). A many-node cluster has one NodeContext per
node (its directory, name, addresses); the control plane's components take node 0's.
Settings that differ from a production node are there because this machine needs them
(NODE-NOTES.md: cgroup v1, no CAP_SYS_RESOURCE, no registry) and are listed in docs/deploy.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel

from taas_controlplane.build.binaries import ensure
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_controlplane.node.host_network import NetworkConfig
from taas_operator.processes import free_ports

NODE_NAME = "taas-node"
KUBE_DNS_OFFSET = 10  # kube-dns's ClusterIP is the 10th address of the service range
COREDNS_USER = "system:taas:coredns"
KUBE_ROUTER_USER = "system:taas:kube-router"
# Who each component is to the API server (its client certificate's CN and O fields): the
# names the apiserver's bootstrap RBAC (and cluster/system_objects.py for CoreDNS and
# kube-router) grant to.
USERS: dict[str, tuple[str, list[str]]] = {
    "kube-controller-manager": ("system:kube-controller-manager", []),
    "kube-scheduler": ("system:kube-scheduler", []),
    "kube-proxy": ("system:kube-proxy", []),
    "kubelet": (f"system:node:{NODE_NAME}", ["system:nodes"]),
    "coredns": (COREDNS_USER, []),
    "kube-router": (KUBE_ROUTER_USER, []),
}


class Ports(BaseModel):
    """Loopback ports of the components' health and metrics endpoints, and kubelet's port."""

    controller_manager: int
    scheduler: int
    kubelet: int
    kubelet_healthz: int
    proxy_healthz: int
    proxy_metrics: int
    dns_health: int
    dns_ready: int


class NodeTimings(BaseModel):
    """How fast the control plane judges a node lost. None: Kubernetes' default (the kubelet
    renews its lease every 10 s, a node is NotReady after 50 s without one, its pods are
    evicted 300 s later, the DefaultTolerationSeconds of every pod). `fast()`: the node tests'
    (tests/e2e/test_node_loss.py), seconds in all; the pods' 300 s stay theirs to shorten
    (a NoExecute toleration of not-ready/unreachable with a small tolerationSeconds)."""

    #: kube-controller-manager --node-monitor-grace-period (s): NotReady after this long.
    grace_period: int | None = None
    #: kube-controller-manager --node-monitor-period (s): how often it looks.
    monitor_period: int | None = None
    #: kubelet nodeLeaseDurationSeconds (it renews at a quarter of it) and
    #: nodeStatusUpdateFrequency (s): both well inside the grace period.
    lease_duration: int | None = None
    status_update: int | None = None

    @classmethod
    def fast(cls) -> NodeTimings:
        """NotReady 20 s after a node's last lease renewal (renewed every 2.5 s)."""
        return cls(grace_period=20, monitor_period=2, lease_duration=10, status_update=4)


class NodeContext(BaseModel):
    """What the components of one node (and, for node 0, the control plane's) need to know."""

    directory: Path
    network: NetworkConfig
    ports: Ports
    ca_file: Path
    kubeconfigs: dict[str, Path]  # component -> its kubeconfig (its own client certificate)
    containerd_endpoint: str
    kubelet_cert: Path
    kubelet_key: Path
    node_name: str = NODE_NAME
    node_ip: str
    #: Where the node's health endpoints listen: loopback on one node; with more, the node's
    #: own address (its loopback is its namespace's, out of the host's reach).
    health_host: str = "127.0.0.1"
    timings: NodeTimings = NodeTimings()

    @property
    def dns_ip(self) -> str:
        return self.network.service_ip(KUBE_DNS_OFFSET)

    @classmethod
    def create(
        cls,
        directory: Path,
        network: NetworkConfig,
        plane: ControlPlane,
        containerd: str,
        index: int = 0,
        timings: NodeTimings | None = None,
    ) -> NodeContext:
        """Credentials (from the control plane's CA) and ports for node `index`'s components:
        free host ports on one node; a node in its own namespace has every port to itself and
        takes kubelet's and kube-proxy's usual ones."""
        name, node_ip = network.node_name(index), network.node_ip(index)
        users = {**USERS, "kubelet": (f"system:node:{name}", ["system:nodes"])}
        kubeconfigs = {
            what: Path(plane.kubeconfig_for(user, groups)) for what, (user, groups) in users.items()
        }
        stem = "kubelet-serving" if network.nodes == 1 else f"kubelet-serving-{name}"
        serving = plane.issue_server_certificate(stem, users["kubelet"][0], [node_ip, name])
        loopback = free_ports(7)
        if network.nodes == 1:
            (kubelet_port,) = free_ports(1, host=network.gateway)
            node_ports = [kubelet_port, *loopback[2:5]]
        else:
            node_ports = [10250, 10248, 10256, 10249]
        return cls(
            directory=directory,
            network=network,
            ports=Ports(
                controller_manager=loopback[0],
                scheduler=loopback[1],
                kubelet=node_ports[0],
                kubelet_healthz=node_ports[1],
                proxy_healthz=node_ports[2],
                proxy_metrics=node_ports[3],
                dns_health=loopback[5],
                dns_ready=loopback[6],
            ),
            ca_file=Path(plane.ca_file),
            kubeconfigs=kubeconfigs,
            containerd_endpoint=containerd,
            kubelet_cert=serving.cert,
            kubelet_key=serving.key,
            node_name=name,
            node_ip=node_ip,
            health_host="127.0.0.1" if network.nodes == 1 else node_ip,
            timings=timings or NodeTimings(),
        )


class Component(BaseModel):
    """One process to run: its name (log file `<name>.log`) and command line."""

    name: str
    argv: list[str]


def _write(path: Path, data: Mapping[str, object] | str) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def controller_manager(ctx: NodeContext) -> Component:
    kubeconfig = str(ctx.kubeconfigs["kube-controller-manager"])
    return Component(
        name="kube-controller-manager",
        argv=[
            str(ensure("kube-controller-manager")),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={ctx.ports.controller_manager}",
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--root-ca-file={ctx.ca_file}",
            f"--cluster-cidr={ctx.network.pods_cidr}",
            f"--service-cluster-ip-range={ctx.network.service_cidr}",
            "--controllers=*",
            *_flags(
                node_monitor_grace_period=ctx.timings.grace_period,
                node_monitor_period=ctx.timings.monitor_period,
            ),
            "--v=1",
        ],
    )


def _flags(**seconds: int | None) -> list[str]:
    """`--name-with-dashes=<n>s` for each value set."""
    return [f"--{k.replace('_', '-')}={v}s" for k, v in seconds.items() if v is not None]


def scheduler(ctx: NodeContext) -> Component:
    kubeconfig = str(ctx.kubeconfigs["kube-scheduler"])
    return Component(
        name="kube-scheduler",
        argv=[
            str(ensure("kube-scheduler")),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={ctx.ports.scheduler}",
            "--leader-elect=false",
            "--v=1",
        ],
    )


def kubelet(ctx: NodeContext) -> Component:
    root = ctx.directory / "kubelet"
    (ctx.directory / "pod-logs").mkdir(parents=True, exist_ok=True)
    # Pods' resolv.conf gets the cluster DNS and search path; nothing of the host's resolvers.
    resolv = _write(ctx.directory / "resolv.conf", "# no upstream resolvers: cluster names only\n")
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": ctx.node_ip,
        "port": ctx.ports.kubelet,
        "readOnlyPort": 0,
        "healthzBindAddress": ctx.health_host,
        "healthzPort": ctx.ports.kubelet_healthz,
        "tlsCertFile": str(ctx.kubelet_cert),
        "tlsPrivateKeyFile": str(ctx.kubelet_key),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ctx.ca_file)},
        },
        "authorization": {"mode": "Webhook"},
        "clusterDomain": ctx.network.cluster_domain,
        "clusterDNS": [ctx.dns_ip],
        "resolvConf": str(resolv),
        "containerRuntimeEndpoint": ctx.containerd_endpoint,
        "podLogsDir": str(ctx.directory / "pod-logs"),
        # cgroup v1 and no CAP_SYS_RESOURCE on this machine (NODE-NOTES.md). Without QoS
        # cgroups kubelet gives the runtime no cgroup parent (its cgroupRoot is unused), so
        # every node's containers are containerd's `/k8s.io/<id>`: a node's own are told by
        # the ids in its containerd's state (host_scrub.run_processes, Node.power_off).
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupsPerQOS": False,
        "enforceNodeAllocatable": [],
        "failSwapOn": False,
        "localStorageCapacityIsolation": False,
        # A shared machine: its disk filling up must not evict the tests' pods, and imported
        # images cannot be pulled again once garbage-collected.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "registerNode": True,
    }
    if ctx.timings.lease_duration is not None:
        config["nodeLeaseDurationSeconds"] = ctx.timings.lease_duration
    if ctx.timings.status_update is not None:
        config["nodeStatusUpdateFrequency"] = f"{ctx.timings.status_update}s"
    path = _write(ctx.directory / "kubelet.yaml", config)
    return Component(
        name="kubelet",
        argv=[
            str(ensure("kubelet")),
            f"--config={path}",
            f"--kubeconfig={ctx.kubeconfigs['kubelet']}",
            f"--root-dir={root}",
            f"--cert-dir={root / 'pki'}",
            f"--hostname-override={ctx.node_name}",
            f"--node-ip={ctx.node_ip}",
            "--v=1",
        ],
    )


def kube_proxy(ctx: NodeContext) -> Component:
    zero = "0s"  # 0 leaves the host's conntrack settings as they are
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(ctx.kubeconfigs["kube-proxy"])},
        "hostnameOverride": ctx.node_name,
        "mode": "iptables",
        "clusterCIDR": ctx.network.pods_cidr,
        "healthzBindAddress": f"{ctx.health_host}:{ctx.ports.proxy_healthz}",
        "metricsBindAddress": f"127.0.0.1:{ctx.ports.proxy_metrics}",
        # NodePorts only on the node's address; no route_localnet sysctl for localhost ones.
        "nodePortAddresses": [f"{ctx.node_ip}/32"],
        "iptables": {"localhostNodePorts": False, "syncPeriod": "30s", "minSyncPeriod": "0s"},
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": zero,
            "tcpCloseWaitTimeout": zero,
            "udpTimeout": zero,
            "udpStreamTimeout": zero,
        },
    }
    path = _write(ctx.directory / "kube-proxy.yaml", config)
    return Component(
        name="kube-proxy", argv=[str(ensure("kube-proxy")), f"--config={path}", "--v=1"]
    )


def coredns(ctx: NodeContext) -> Component:
    net = ctx.network
    # Only the cluster's zones: a name outside them is refused, never forwarded off the machine.
    corefile = f"""{net.cluster_domain}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {net.host_address}
    errors
    health 127.0.0.1:{ctx.ports.dns_health}
    ready 127.0.0.1:{ctx.ports.dns_ready}
    kubernetes {net.cluster_domain} in-addr.arpa ip6.arpa {{
        kubeconfig {ctx.kubeconfigs["coredns"]} taas
        pods insecure
        ttl 5
    }}
    cache 5
}}
"""
    path = _write(ctx.directory / "Corefile", corefile)
    return Component(name="coredns", argv=[str(ensure("coredns")), "-conf", str(path)])


def kube_router(ctx: NodeContext) -> Component:
    """kube-router as a NetworkPolicy enforcer only (no routing, no service proxy)."""
    return Component(
        name="kube-router",
        argv=[
            str(ensure("kube-router")),
            f"--kubeconfig={ctx.kubeconfigs['kube-router']}",
            "--run-firewall=true",
            "--run-router=false",
            "--run-service-proxy=false",
            f"--hostname-override={ctx.node_name}",
            f"--service-cluster-ip-range={ctx.network.service_cidr}",
            "--health-port=0",  # its health server would listen on every interface
            "--metrics-port=0",
            "--iptables-sync-period=30s",
            "--v=1",
        ],
    )
