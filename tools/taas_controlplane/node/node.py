"""One node of a cluster: its container runtime, its components' processes, and (in a many-node
cluster) its network namespace.

    node = Node(network, index, run_dir, cache_dir)
    node.network_up()                      # many nodes: the namespace, veth, pod bridge, routes
    node.start_runtime()                   # containerd (in the namespace), sandbox + toolbox
    node.ctx = NodeContext.create(...); node.spawn(kubelet(node.ctx))   # component_commands
    node.load_image(archive)               # once per archive content (a marker in the root)
    node.stop_components(); node.stop_runtime()
    node.power_off(); node.power_on()  # many nodes: a node dies (and comes back)

On one node (`network.nodes` 1) everything is as it always was: the node's files are the run
directory's, its processes run in the host's namespaces, its name is `taas-node`. With more,
node `i` is `taas-node-<i>`: its files under `<run dir>/taas-node-<i>/`, its processes inside
its own network namespace (namespace.py), its containerd's content store in
`<cache>/node/containerd-<i>` (node 0 keeps `containerd`, the one-node cluster's), so images
imported once stay imported for the next run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from taas_controlplane.build import busybox_images
from taas_controlplane.node import component_commands, host_scrub
from taas_controlplane.node.containerd import Containerd
from taas_controlplane.node.host_network import NetworkConfig
from taas_controlplane.node.namespace import NodeNamespace
from taas_operator.processes import spawn
from taas_operator.processes import stop as stop_process

#: The node's components, in the order they are stopped (kubelet first: nothing restarts pods).
NODE_COMPONENTS = ("kubelet", "kube-proxy", "kube-router")


class Node:
    """One node's runtime, namespace (many nodes), context and processes."""

    def __init__(self, network: NetworkConfig, index: int, run_dir: Path, cache: Path) -> None:
        self.network, self.index = network, index
        self.name = network.node_name(index)
        single = network.nodes == 1
        self.directory = run_dir if single else run_dir / self.name
        self.ns = None if single else NodeNamespace(network, index, self.directory)
        root = cache / ("containerd" if index == 0 else f"containerd-{index}")
        self.runtime = Containerd(
            self.directory, root, self.directory / "cni", busybox_images.SANDBOX_IMAGE
        )
        self.ctx: component_commands.NodeContext | None = None
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def ip(self) -> str:
        return self.network.node_ip(self.index)

    def network_up(self) -> None:
        """Many nodes: make the node's namespace and its network (one node: host_network does)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.ns is not None:
            self.ns.up(self.directory / "cni", self.directory / "cni-ipam")

    def start_runtime(self) -> None:
        """containerd in the node's namespace, cleared of stale images, with the sandbox and
        toolbox images."""
        self._in_namespace(lambda fds: self.runtime.start(namespaces=fds))
        self.runtime.prune_images()  # what earlier runs' imports replaced
        self.load_image(busybox_images.sandbox_archive())
        self.load_image(busybox_images.toolbox_archive())

    def load_image(self, archive: Path) -> None:
        """Import an image archive into the node's containerd, once per archive content."""
        stat = archive.stat()
        marker = (
            self.runtime.root / "imported" / f"{archive.name}-{stat.st_size}-{stat.st_mtime_ns}"
        )
        if marker.exists():
            return
        self.runtime.import_archive(archive)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()

    def spawn(self, component: component_commands.Component) -> None:
        """Start a component of this node (inside its namespace), logging to `<name>.log`."""

        def start(fds: list[int]) -> None:
            with (self.directory / f"{component.name}.log").open("ab") as log:
                self.procs[component.name] = spawn(
                    component.argv, death_signal=signal.SIGTERM, stdout=log, namespaces=fds
                )

        self._in_namespace(start)

    def iptables(self, table: str) -> str:
        """`iptables-save -t <table>` as the node's components see it."""
        if self.ns is None:
            return host_scrub.output("iptables-save", "-t", table)
        return self.ns.run("iptables-save", "-t", table, check=False).stdout

    def running_tasks(self) -> list[str]:
        return self.runtime.ctr("tasks", "list", "--quiet", check=False).stdout.split()

    def exited(self) -> str | None:
        """The name of a component of this node that has exited (containerd's too), if any."""
        procs = {**self.procs, "containerd": self.runtime.proc}
        gone = next((n for n, p in procs.items() if p is not None and p.poll() is not None), None)
        return None if gone is None else self.label(gone)

    def label(self, component: str) -> str:
        """`component` on one node; `component on taas-node-<i>` with more."""
        return component if self.ns is None else f"{component} on {self.name}"

    def stop_components(self) -> None:
        for name in NODE_COMPONENTS:
            proc = self.procs.pop(name, None)
            if proc is not None:
                stop_process(proc, signal.SIGTERM, grace=10.0)

    def stop_runtime(self) -> list[str]:
        """Remove every container, stop containerd; returns the containers it still had."""
        if self.runtime.proc is None:
            return []
        self.runtime.remove_all_containers()
        left = self.runtime.containers()
        self.runtime.stop()
        return left

    def power_off(self) -> None:
        """A node that dies (many nodes only): SIGKILL its kubelet, containerd, kube-proxy,
        kube-router and every process of its containers and their shims (a command line or a
        root file system naming its containerd's state, or the cgroup of one of its
        containers; not its directory: node 0's holds the control plane's CoreDNS files too),
        then set its link down, so the control plane hears nothing from it any more. What it
        leaves (mounts, cgroups, its namespace) is the cluster's stop's to remove, or a
        `power_on`'s components' to reuse."""
        if self.ns is None:
            raise ValueError("only a node of a many-node cluster (in its own namespace) powers off")
        for proc in [*self.procs.values(), *([self.runtime.proc] if self.runtime.proc else [])]:
            stop_process(proc, signal.SIGKILL, grace=0)  # its whole process group
        host_scrub.kill_run_processes(self.directory, named=self.runtime.state)
        self.procs.clear()
        self.runtime.proc = None
        subprocess.run(["ip", "link", "set", self.ns.host_link, "down"], check=True)

    def power_on(self) -> None:
        """A node powered off comes back: its link up, containerd, kube-proxy and kubelet
        started again with the same context (kube-router is the cluster's to start, once
        kube-proxy has written its rules: see Cluster.power_on)."""
        if self.ns is None or self.ctx is None:
            raise ValueError("only a started node of a many-node cluster powers on")
        subprocess.run(["ip", "link", "set", self.ns.host_link, "up"], check=True)
        self._in_namespace(lambda fds: self.runtime.start(namespaces=fds))
        self.spawn(component_commands.kube_proxy(self.ctx))
        self.spawn(component_commands.kubelet(self.ctx))

    def _in_namespace(self, start: Callable[[list[int]], None]) -> None:
        fds = [] if self.ns is None else [self.ns.fd()]
        try:
            start(fds)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
