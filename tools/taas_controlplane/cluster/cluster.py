"""A whole Kubernetes cluster on this machine, of one node or several: start it, use it, stop
it leaving nothing.

    with Cluster() as cluster:              # needs root; builds what it lacks first
        cluster.load_image(archive)         # OCI/docker archive -> every node's containerd
        cluster.kubectl("apply", "-f", ...)
    Cluster(nodes=3)                        # 3 nodes, each in its own network namespace
    cluster.node("taas-node-1").power_off()  # a node dies (node/node.py); cluster.power_on(name)

Start order: the network (node/host_network.py: one node's pod bridge, or the node network; then
each node's namespace, node/namespace.py), etcd + kube-apiserver on the bridge address
(controlplane/etcd_apiserver.py), the image registry there too (registry.py), each node's containerd
(node/containerd.py, node/node.py; trusting the registry) with the sandbox image, then
kube-controller-manager, kube-scheduler, CoreDNS on the host, each node's kube-proxy and kubelet,
then (once the nodes are registered; with several, their pod ranges written on them) each node's
kube-router (NetworkPolicy) (component_commands.py); ready when every node is Ready, its kubelet,
kube-proxy and kube-router answer, CoreDNS answers, and `default` has its ServiceAccount; then the
storage classes' provisioner (storage.py); then, if asked (`scheduling`), scheduler-plugins and
Kueue (`taas_controlplane.cluster.scheduling`), and Katib (`katib`,
`taas_controlplane.cluster.katib`). Stop order: Katib, those schedulers, the provisioner,
controller-manager and scheduler (nothing recreates pods), every pod deleted and its sandbox torn
down by its kubelet, the nodes' components and CoreDNS, containerd's remaining containers,
containerd, the volumes' directories, the registry, the control plane; then host_scrub.scrub removes
whatever is left. One cluster per machine (a lock): one node's kube-proxy and kube-router own
host-wide iptables chains. A run killed before it could stop is scrubbed by the next start
(`<cache>/node/last-run.json`).

Over 400 lines: the start and the stop of every part, in the orders above, are one sequence
each (what is started is stopped, in reverse, whatever failed half-way); the parts themselves
live in the modules named above.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import IO

from taas_controlplane.build.binaries import BuildError, ensure
from taas_controlplane.cluster import system_objects
from taas_controlplane.cluster.katib import KatibError, KatibOptions, KatibStack
from taas_controlplane.cluster.machine_lock import last_run, state_dir
from taas_controlplane.cluster.registry import Registry, RegistryError
from taas_controlplane.cluster.scheduling import SchedulingError, SchedulingOptions, SchedulingStack
from taas_controlplane.cluster.storage import Storage, StorageError
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane, ControlPlaneError
from taas_controlplane.node import component_commands, host_scrub
from taas_controlplane.node.containerd import Containerd, missing_packages
from taas_controlplane.node.host_network import NetworkConfig, NodeNetwork
from taas_controlplane.node.node import Node
from taas_controlplane.parts import Parts, log_tail
from taas_operator.processes import spawn
from taas_operator.processes import stop as stop_process

NODE_BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
    "coredns",
    "kube-router",
    "registry",
    "local-path-provisioner",
)
#: Nodes of one cluster at most: each runs its own kubelet, containerd, kube-proxy and
#: kube-router on this one machine.
MAX_NODES = 8


class ClusterError(RuntimeError):
    """The cluster cannot start here, or did not become ready; the message says why."""


class Cluster(Parts):
    """One or more nodes: control plane, container runtimes, kubelets, network, DNS, policy."""

    def __init__(
        self,
        directory: Path | None = None,
        network: NetworkConfig | None = None,
        network_policy: bool = True,
        scheduling: SchedulingOptions | None = None,
        nodes: int = 1,
        katib: KatibOptions | None = None,
        node_timings: component_commands.NodeTimings | None = None,
    ) -> None:
        self._own_dir = directory is None
        self.directory = directory or Path(tempfile.mkdtemp(prefix="taas-node-", dir="/tmp"))
        self.network = network or NetworkConfig(nodes=nodes)
        self.network_policy = network_policy
        #: How fast a node is judged lost (component_commands.NodeTimings; Kubernetes' by default).
        self.node_timings = node_timings or component_commands.NodeTimings()
        self.plane = ControlPlane(
            self.directory / "controlplane",
            bind_address=self.network.host_address,
            service_cidr=self.network.service_cidr,
            for_nodes=True,
        )
        self.nodes = [
            Node(self.network, i, self.directory, state_dir()) for i in range(self.network.nodes)
        ]
        self.net = NodeNetwork(self.network)
        #: The image registry every node pulls from (registry.py), on the bridge address.
        self.registry = Registry(
            self.directory, state_dir() / "registry", self.network.host_address
        )
        #: The storage classes' provisioner (storage.py), started once the nodes are Ready.
        self.storage = Storage(self.plane, self.directory, self.node_names)
        #: scheduler-plugins and/or Kueue, started last and stopped first (`scheduling`).
        self.schedulers = SchedulingStack(
            self.plane, self.directory / "scheduling", scheduling or SchedulingOptions()
        )
        #: Katib (hyperparameter search), started after the schedulers, stopped first (`katib`).
        self.katib = KatibStack(
            self.plane,
            self.directory / "katib",
            self.network,
            self.load_image,
            katib or KatibOptions(),
        )
        #: The control plane's own components on the host (controller-manager, scheduler, DNS).
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._lock: IO[str] | None = None
        self._sysctls: dict[str, str] = {}
        #: Containers containerd still had when it was stopped (after removing them all): [].
        self.containers_at_stop: list[str] | None = None

    # -- public surface ----------------------------------------------------------------------
    @property
    def node_name(self) -> str:
        """The first node's name (the only one's on one node)."""
        return self.nodes[0].name

    @property
    def node_names(self) -> list[str]:
        return [node.name for node in self.nodes]

    @property
    def runtime(self) -> Containerd:
        """The first node's containerd (the only one's on one node)."""
        return self.nodes[0].runtime

    @property
    def ctx(self) -> component_commands.NodeContext | None:
        return self.nodes[0].ctx

    @property
    def ctr_hint(self) -> str:
        """The command that imports an image archive into a node's containerd."""
        sockets = " | ".join(str(node.runtime.socket) for node in self.nodes)
        address = sockets if len(self.nodes) == 1 else "{" + sockets + "}"
        return f"ctr --address {address} -n k8s.io images import ARCHIVE.tar"

    def host_state(self) -> host_scrub.HostState:
        """What of the host this run can have changed (see host_scrub.HostState)."""
        roots = [node.runtime.root for node in self.nodes]
        return host_scrub.HostState.capture(self.directory, self.network, roots)

    def exited(self) -> str | None:
        """The name of a component that has exited, if any."""
        gone = next((n for n, p in self.procs.items() if p.poll() is not None), None)
        for node in self.nodes:
            gone = gone or node.exited()
        gone = gone or ("registry" if self.registry.exited() else None)
        gone = gone or self.storage.exited()
        return gone or self.plane.exited() or self.schedulers.exited() or self.katib.exited()

    @property
    def kubeconfig(self) -> str:
        return self.plane.kubeconfig

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl as admin against this cluster (see ControlPlane.kubectl)."""
        return self.plane.kubectl(*args, check=check, input=input)

    def load_image(self, archive: Path) -> None:
        """Import an image archive into every node's containerd, once per archive content
        (the nodes' imports side by side)."""
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(lambda node: node.load_image(archive), self.nodes))

    def node(self, name: str) -> Node:
        return next(node for node in self.nodes if node.name == name)

    def power_on(self, name: str, timeout: float = 180.0) -> None:
        """Bring back a node powered off (`Node.power_off`) and wait until it is Ready."""
        node = self.node(name)
        node.power_on()
        self._start_kube_router([node], timeout)
        self._wait_ready(timeout)

    def _start_kube_router(self, nodes: list[Node], timeout: float) -> None:
        """With NetworkPolicy: kube-router on each of `nodes`, once its kube-proxy has written
        its service rules. kube-router (v1.6.1) rewrites the whole filter table from a copy it
        read just before (iptables-save, then iptables-restore): a chain kube-proxy makes in
        between is lost, kube-proxy's first sync then fails ("Chain 'KUBE-SERVICES' does not
        exist") and, seen once, it never synced again: the node's pods had no Service, so no
        DNS. Started after that first sync, kube-router's copy holds kube-proxy's chains."""
        if not self.network_policy:
            return
        self._wait_ready(timeout, only=[f"{node.name} service rules" for node in nodes])
        for node in nodes:
            assert node.ctx
            node.spawn(component_commands.kube_router(node.ctx))

    def start(self, timeout: float = 300.0) -> Cluster:
        try:
            self._preflight()
            self._take_lock()
        except ClusterError:
            if self._own_dir:  # nothing was started: leave no empty directory either
                shutil.rmtree(self.directory, ignore_errors=True)
            raise
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop everything and remove what the run left; safe to call more than once."""
        if self._lock is None:  # never started, or already stopped: nothing of ours is left
            return
        self.katib.stop()  # its webhooks first: nothing may call a Katib that is gone
        self.schedulers.stop()  # Kueue's webhooks first: nothing may call a Kueue that is gone
        self.storage.stop()
        for name in ("kube-controller-manager", "kube-scheduler"):
            self._stop(name)
        if any("kubelet" in node.procs for node in self.nodes) and self.plane.apiserver:
            self._drain_pods()
        for node in self.nodes:
            node.stop_components()
        self._stop("coredns")
        left: list[str] = []
        for node in self.nodes:
            left += node.stop_runtime()
        self.containers_at_stop = left
        self.storage.remove()
        self.registry.stop()
        self.plane.stop(remove=False)
        host_scrub.scrub(self.directory, self.network, self._sysctls)
        last_run().unlink(missing_ok=True)
        if self._own_dir:
            shutil.rmtree(self.directory, ignore_errors=True)
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    # -- start -------------------------------------------------------------------------------
    def _preflight(self) -> None:
        if os.geteuid() != 0:
            raise ClusterError(
                "a Kubernetes node needs root (it creates a bridge, network namespaces, mounts "
                "and iptables rules): run `taas-controlplane cluster up` as root, e.g. with sudo."
            )
        if not 1 <= self.network.nodes <= MAX_NODES:
            raise ClusterError(
                f"--nodes must be between 1 and {MAX_NODES} (got {self.network.nodes}): every "
                "node runs on this machine"
            )
        missing = missing_packages()
        if missing:
            raise ClusterError(
                f"missing Debian packages: {' '.join(missing)}; install them with "
                f"`apt-get install -y {' '.join(missing)}` (`.ci/run` does)."
            )
        try:
            for name in NODE_BINARIES:
                if name != "kube-router" or self.network_policy:
                    ensure(name)
        except BuildError as err:
            raise ClusterError(str(err)) from err

    def _take_lock(self) -> None:
        handle = (state_dir() / "cluster.lock").open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise ClusterError(
                "another TaaS cluster runs on this machine (kube-proxy and kube-router own "
                "host-wide iptables chains, so only one can); stop it first (Ctrl-C in its "
                "`taas-controlplane cluster up`)."
            ) from None
        self._lock = handle
        host_scrub.RunRecord.scrub_saved(last_run())

    def _start(self, timeout: float) -> None:
        self._sysctls = host_scrub.read_sysctls()
        record = host_scrub.RunRecord(
            directory=self.directory, network=self.network, sysctls=self._sysctls
        )
        last_run().write_text(record.model_dump_json())
        self.net.up(self.directory / "cni", self.directory / "cni-ipam")
        for node in self.nodes:
            node.network_up()
        self.plane.directory.mkdir(parents=True, exist_ok=True)
        try:
            self.plane.start()
        except ControlPlaneError as err:
            raise ClusterError(str(err)) from err
        try:
            self.registry.start(self.plane)
        except RegistryError as err:
            raise ClusterError(str(err)) from err
        self.kubectl("apply", "-f", "-", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": system_objects.manifests(self.network)}
        ))  # fmt: skip
        for node in self.nodes:
            node.runtime.hosts_dir = self.registry.hosts_dir
            node.start_runtime()
            node.ctx = component_commands.NodeContext.create(
                node.directory, self.network, self.plane, node.runtime.endpoint, node.index,
                self.node_timings,
            )  # fmt: skip
        host = self.nodes[0].ctx
        assert host
        for build in (
            component_commands.controller_manager,
            component_commands.scheduler,
            component_commands.coredns,
        ):
            self._spawn(build(host))
        for node in self.nodes:
            assert node.ctx
            node.spawn(component_commands.kube_proxy(node.ctx))
            node.spawn(component_commands.kubelet(node.ctx))
        if self.network_policy or len(self.nodes) > 1:
            self._wait_ready(timeout, only=["registered"])
        if len(self.nodes) > 1:
            self._set_pod_cidrs()
        # kube-router reads its node's address from the Node object
        self._start_kube_router(self.nodes, timeout)
        self._wait_ready(timeout)
        try:
            self.storage.start()
        except StorageError as err:
            raise ClusterError(str(err)) from err
        if self.schedulers.options.any:
            try:
                self.schedulers.start()
            except SchedulingError as err:
                raise ClusterError(str(err)) from err
        if self.katib.options.enabled:
            try:
                self.katib.start()
            except KatibError as err:
                raise ClusterError(str(err)) from err

    def _set_pod_cidrs(self) -> None:
        """Write each node's pod range on its Node (the ranges its CNI network and the other
        nodes' routes were given; what --allocate-node-cidrs would write, in node order)."""
        for node in self.nodes:
            cidr = self.network.node_pod_cidr(node.index)
            patch = {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}}
            self.kubectl("patch", "node", node.name, "-p", json.dumps(patch))

    def _spawn(self, component: component_commands.Component) -> None:
        with (self.directory / f"{component.name}.log").open("ab") as log:
            self.procs[component.name] = spawn(
                component.argv, death_signal=signal.SIGTERM, stdout=log
            )

    def _checks(self) -> dict[str, Callable[[], bool]]:
        """What must hold for the cluster to be ready, by name (a node's name added with more
        than one), plus `registered` checks (a node's Node exists) used before kube-router."""
        host = self.nodes[0].ctx
        assert host
        checks: dict[str, Callable[[], bool]] = {
            "coredns": partial(_healthy, f"http://127.0.0.1:{host.ports.dns_ready}/ready"),
            "default ServiceAccount": lambda: self.kubectl(
                "get", "serviceaccount", "default", check=False
            ).returncode == 0,
        }  # fmt: skip
        for node in self.nodes:
            ctx = node.ctx
            assert ctx
            base = f"http://{ctx.health_host}"
            checks[node.label("kubelet")] = partial(
                _healthy, f"{base}:{ctx.ports.kubelet_healthz}/healthz"
            )
            checks[node.label("kube-proxy")] = partial(
                _healthy, f"{base}:{ctx.ports.proxy_healthz}/healthz"
            )
            checks[f"node {node.name} Ready"] = partial(self._node_ready, node.name)
            checks[f"node {node.name} registered"] = partial(self._node_registered, node.name)
            checks[f"node {node.name} service rules"] = partial(
                lambda n: "-A KUBE-SERVICES " in n.iptables("nat"), node
            )
            if self.network_policy:
                checks[node.label("kube-router")] = partial(
                    lambda n: ":KUBE-ROUTER-FORWARD" in n.iptables("filter"), node
                )
        return checks

    def _node_registered(self, name: str) -> bool:
        return self.kubectl("get", "node", name, check=False).returncode == 0

    def _node_ready(self, name: str) -> bool:
        done = self.kubectl(
            "get", "node", name, "-o",
            "jsonpath={.status.conditions[?(@.type=='Ready')].status}", check=False,
        )  # fmt: skip
        return done.stdout.strip() == "True"

    def _wait_ready(self, timeout: float, only: list[str] | None = None) -> None:
        """Wait for every check (or those whose name ends with one of `only`)."""
        checks = self._checks()
        pending = [
            name
            for name in checks
            if (only and name.endswith(tuple(only))) or (not only and "registered" not in name)
        ]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._fail_on_exit()
            pending = [p for p in pending if not checks[p]()]
            if not pending:
                return
            time.sleep(0.5)
        raise ClusterError(
            f"the cluster was not ready after {timeout:.0f}s; waiting for: {', '.join(pending)}; "
            f"logs in {self.directory}"
        )

    def _fail_on_exit(self) -> None:
        owners = [(self.directory, self.procs), *((n.directory, n.procs) for n in self.nodes)]
        for directory, procs in owners:
            for name, proc in procs.items():
                if proc.poll() is not None:
                    log = directory / f"{name}.log"
                    raise ClusterError(
                        f"{name} exited with code {proc.returncode} during start-up; "
                        f"log {log}:\n{log_tail(log)}"
                    )

    # -- stop --------------------------------------------------------------------------------
    def _stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is not None:
            stop_process(proc, signal.SIGTERM, grace=10.0)

    def _drain_pods(self, timeout: float = 60.0) -> None:
        """Delete every pod and let kubelet tear down their sandboxes (CNI DEL, netns)."""
        self.kubectl(
            "delete", "pods", "--all", "--all-namespaces", "--force", "--grace-period=0",
            "--wait=false", check=False,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not any(node.running_tasks() for node in self.nodes):
                return
            time.sleep(0.5)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) == 200
    except OSError:
        return False
