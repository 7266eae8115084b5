"""A simulated cluster: the real control plane with every kubelet played by kwok.

    with SimCluster(nodes=20, gpu_nodes=4) as sim:   # builds what it lacks first
        sim.kubeconfig                               # admin (system:masters)
        sim.stop_heartbeat("sim-node-0003")          # the node's kubelet goes silent
        sim.delete_node("sim-node-0004"); sim.restore_node("sim-node-0004")

Start order: etcd + kube-apiserver (etcd_apiserver.ControlPlane, unchanged), kube-scheduler,
kube-controller-manager (every default controller, node-failure timings from
`command_lines.Timings`: shortened unless `timings=Timings.defaults()`), kwok with stages.yaml,
then the Node objects (node_objects.py); ready when every node is Ready; then, if asked
(`scheduling`), scheduler-plugins and Kueue (`taas_controlplane.cluster.scheduling`). Stop order:
those, kwok, the controller-manager and scheduler, then the control plane; every process
runs in its own process group and gets SIGTERM if this process dies, and `stop()` removes the
working directory it made. Nothing listens anywhere but 127.0.0.1.
"""

from __future__ import annotations

import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes import client, config

from taas_controlplane.build.binaries import ensure
from taas_controlplane.cluster.scheduling import SchedulingError, SchedulingOptions, SchedulingStack
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane, ControlPlaneError
from taas_controlplane.parts import Parts, log_tail
from taas_controlplane.sim import command_lines
from taas_controlplane.sim.command_lines import Timings
from taas_controlplane.sim.node_objects import KWOK_LABEL, KWOK_VALUE, node_manifests
from taas_operator.processes import free_ports, spawn
from taas_operator.processes import stop as stop_process

STAGES = Path(__file__).resolve().parent / "stages.yaml"
KWOK_USER = "system:taas:kwok"
#: What a simulated cluster runs (scheduler-plugins and Kueue besides, when asked).
SIM_BINARIES = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kwok")


class SimClusterError(RuntimeError):
    """The simulated cluster did not come up; the message says which part and where its log is."""


def _node_ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


class SimCluster(Parts):
    """N kwok nodes behind a real kube-apiserver, scheduler and controller-manager."""

    def __init__(
        self,
        nodes: int = 20,
        gpu_nodes: int = 0,
        directory: Path | None = None,
        timings: Timings | None = None,
        scheduling: SchedulingOptions | None = None,
        audit_users: Sequence[str] = (),
    ) -> None:
        """`scheduling`: scheduler-plugins and/or Kueue to start too. `audit_users`: log these
        users' requests (the plane's `audit.log`), e.g. a benchmarked controller's."""
        self.node_objects = node_manifests(nodes, gpu_nodes)  # checks the counts first
        self._own_dir = directory is None
        self.directory = directory or Path(tempfile.mkdtemp(prefix="taas-sim-"))
        self.timings = timings or Timings.for_tests()
        self.plane = ControlPlane(self.directory / "controlplane", audit_users=audit_users)
        #: scheduler-plugins and/or Kueue, started once the nodes are Ready, stopped first.
        self.schedulers = SchedulingStack(
            self.plane, self.directory / "scheduling", scheduling or SchedulingOptions()
        )
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ports: dict[str, int] = {}
        self._api: client.ApiClient | None = None
        #: Seconds from the first Node object created to every node Ready (set by start()).
        self.nodes_ready_seconds: float | None = None
        self._started_nodes = 0.0

    # -- public surface ----------------------------------------------------------------------
    @property
    def kubeconfig(self) -> str:
        return self.plane.kubeconfig

    @property
    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.node_objects]

    @property
    def api(self) -> client.ApiClient:
        """An admin client (kubernetes package) for this cluster."""
        if self._api is None:
            configuration = client.Configuration()
            config.load_kube_config(config_file=self.kubeconfig, client_configuration=configuration)
            configuration.connection_pool_maxsize = 32
            self._api = client.ApiClient(configuration)
        return self._api

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.plane.kubectl(*args, check=check)

    def exited(self) -> str | None:
        """The name of a process that has exited, if any."""
        procs = {**self.procs, "etcd": self.plane.etcd, "kube-apiserver": self.plane.apiserver}
        gone = next((n for n, p in procs.items() if p is None or p.poll() is not None), None)
        return gone or self.schedulers.exited()

    def pids(self) -> dict[str, int]:
        procs = {**self.procs, "etcd": self.plane.etcd, "kube-apiserver": self.plane.apiserver}
        found = {name: p.pid for name, p in procs.items() if p is not None}
        return {**found, **self.schedulers.pids()}

    def start(self, timeout: float = 180.0) -> SimCluster:
        binaries = {name: ensure(name) for name in SIM_BINARIES}
        try:
            self.plane.directory.mkdir(parents=True, exist_ok=True)
            self.plane.start()
            self._start_components(binaries)
            self._wait_healthy(timeout)
            self._create_nodes()
            self._wait_nodes_ready(timeout)
            if self.schedulers.options.any:
                self.schedulers.start()
        except SchedulingError as err:
            self.stop()
            raise SimClusterError(str(err)) from err
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every process (the schedulers of gang jobs and kwok first, the control plane
        last); safe to call twice."""
        self.schedulers.stop()
        for name in ("kwok", "kube-controller-manager", "kube-scheduler"):
            proc = self.procs.pop(name, None)
            if proc is not None:
                stop_process(proc, signal.SIGTERM, grace=10.0)
        if self._api is not None:
            self._api.close()
            self._api = None
        self.plane.stop(remove=False)
        if self._own_dir:
            shutil.rmtree(self.directory, ignore_errors=True)

    def ready_nodes(self) -> list[str]:
        nodes = client.CoreV1Api(self.api).list_node().items
        return sorted(str(n.metadata and n.metadata.name) for n in nodes if _node_ready(n))

    def stop_heartbeat(self, node: str) -> None:
        """Take the node out of kwok's hands: its Lease is no longer renewed and its pods no
        longer change, as when a machine loses power or its network."""
        patch = {"metadata": {"labels": {KWOK_LABEL: None}}}
        client.CoreV1Api(self.api).patch_node(node, patch)

    def resume_heartbeat(self, node: str) -> None:
        """Give the node back to kwok (the machine is back)."""
        patch = {"metadata": {"labels": {KWOK_LABEL: KWOK_VALUE}}}
        client.CoreV1Api(self.api).patch_node(node, patch)

    def delete_node(self, node: str) -> None:
        client.CoreV1Api(self.api).delete_node(node)

    def restore_node(self, node: str) -> None:
        """Create a deleted node again as it was first made (kwok brings it Ready)."""
        manifest: Any = next(n for n in self.node_objects if n["metadata"]["name"] == node)
        client.CoreV1Api(self.api).create_node(manifest)  # the client takes plain dicts too

    # -- internals ---------------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str]) -> None:
        with (self.plane.directory / f"{name}.log").open("ab") as log:
            self.procs[name] = spawn(argv, death_signal=signal.SIGTERM, stdout=log)

    def _start_components(self, binaries: dict[str, Path]) -> None:
        plane = self.plane
        scheduler_port, manager_port = free_ports(2)
        self.ports = {"kube-scheduler": scheduler_port, "kube-controller-manager": manager_port}
        self._spawn(
            "kube-scheduler",
            command_lines.scheduler(
                binaries["kube-scheduler"],
                plane.kubeconfig_for("system:kube-scheduler"),
                scheduler_port,
            ),
        )
        self._spawn(
            "kube-controller-manager",
            command_lines.controller_manager(
                binaries["kube-controller-manager"],
                plane.kubeconfig_for("system:kube-controller-manager"),
                manager_port,
                plane.ca_file,
                self.timings,
            ),
        )
        kwok_config = self.plane.directory / "kwok-stages.yaml"
        shutil.copyfile(STAGES, kwok_config)
        self._spawn(
            "kwok",
            command_lines.kwok(
                binaries["kwok"],
                plane.kubeconfig_for(KWOK_USER, ["system:masters"]),
                kwok_config,
                self.timings,
            ),
        )

    def _check_alive(self) -> None:
        gone = self.exited()
        if gone:
            log = self.plane.directory / f"{gone}.log"
            raise SimClusterError(f"{gone} exited during start-up; log {log}:\n{log_tail(log)}")

    def _wait_healthy(self, timeout: float) -> None:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # their self-signed serving certificates
        deadline = time.monotonic() + timeout
        for name, port in self.ports.items():
            while True:
                self._check_alive()
                try:
                    url = f"https://127.0.0.1:{port}/healthz"
                    with urllib.request.urlopen(url, context=context, timeout=2) as answer:
                        if answer.read() == b"ok":
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    log = self.plane.directory / f"{name}.log"
                    raise SimClusterError(
                        f"{name} not healthy after {timeout:.0f}s; log {log}:\n{log_tail(log)}"
                    )
                time.sleep(0.25)

    def _create_nodes(self) -> None:
        core = client.CoreV1Api(self.api)
        self._started_nodes = time.monotonic()
        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(core.create_node, self.node_objects))

    def _wait_nodes_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        want = len(self.node_objects)
        ready: list[str] = []
        while time.monotonic() < deadline:
            self._check_alive()
            ready = self.ready_nodes()
            if len(ready) == want:
                self.nodes_ready_seconds = time.monotonic() - self._started_nodes
                return
            time.sleep(0.25)
        log = self.plane.directory / "kwok.log"
        raise SimClusterError(
            f"{len(ready)} of {want} nodes Ready after {timeout:.0f}s; kwok's log {log}:\n"
            f"{log_tail(log)}"
        )


__all__ = ["ControlPlaneError", "SimCluster", "SimClusterError", "Timings"]
