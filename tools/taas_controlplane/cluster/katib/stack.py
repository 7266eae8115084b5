"""Start and stop Katib (hyperparameter search) against one cluster.

    with KatibStack(plane, directory, network, load_image, KatibOptions(job_crds=[...])):
        ...   # Experiments in namespaces labelled katib.kubeflow.org/metrics-collector-injection

Start order: the TFJob CRD (applied from `job_crds` if given, else it must already be there:
katib-controller watches the trial kinds it finds at start and skips a missing one until
restarted), Katib's CRDs, its namespace, ConfigMap and RBAC; the images of what runs in pods
(the goptuna suggestion and the file metrics collector: each its Go binary on the node's
busybox image) loaded into the nodes; PostgreSQL, a database `katib`, db-manager (on 127.0.0.1),
its gate on the bridge address (gate.py: the controller may ask anything, a trial's pod only to
report its own trial's observation logs), katib-controller (ready: caches synced, webhook server
serving); only then its webhook configurations, so no request is ever sent to a controller
that is not there yet. Stop order: the webhook configurations first (the pod webhook fails
closed: left behind, it would refuse every pod in a labelled namespace), then the controller,
the gate, db-manager, PostgreSQL, whose data directory is removed. Logs:
`<directory>/<part>.log`.
"""

from __future__ import annotations

import base64
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml
from pydantic import BaseModel

from taas_controlplane.build.binaries import KATIB_VERSION, BuildError, ensure
from taas_controlplane.build.busybox_images import derived_archive, toolbox_archive
from taas_controlplane.cluster.addon_processes import HostParts
from taas_controlplane.cluster.katib import config
from taas_controlplane.cluster.katib.host_processes import (
    ControllerFiles,
    Database,
    KatibError,
    check_can_run,
    controller_argv,
    controller_env,
    db_manager_argv,
    db_manager_env,
    gate_argv,
    resolv_conf,
)
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_controlplane.node.host_network import NetworkConfig
from taas_operator.processes import free_ports
from taas_operator.processes import stop as stop_process

CONTROLLER_USER = "system:taas:katib-controller"
#: The gate's user: it lists pods (by address) and reads Trials, nothing else.
GATE_USER = "system:taas:katib-db-gate"
TFJOB_CRD = "tfjobs.kubeflow.org"
IMAGES = config.KatibImages(
    suggestion_goptuna=f"taas.local/katib-suggestion-goptuna:{KATIB_VERSION}",
    file_metrics_collector=f"taas.local/katib-file-metrics-collector:{KATIB_VERSION}",
)
#: binary -> (image, where the binary is in it)
_IMAGE_BINARIES = {
    "katib-suggestion-goptuna": (IMAGES.suggestion_goptuna, "/bin/goptuna-suggestion"),
    "katib-file-metricscollector": (IMAGES.file_metrics_collector, "/bin/file-metricscollector"),
}


class KatibOptions(BaseModel):
    """Whether to run Katib, and the trial kinds' CRDs to apply before it starts."""

    enabled: bool = False
    #: CRD files applied first (TaaS's TFJob CRD); without them the TFJob CRD must be there.
    job_crds: list[Path] = []


def image_archives() -> dict[str, Path]:
    """The suggestion's and the collector's images (reference -> OCI archive), built from
    their Go binaries on the node's busybox image."""
    archives = {}
    for binary, (reference, path) in _IMAGE_BINARIES.items():
        program = ensure(binary).read_bytes()
        archives[reference] = derived_archive(
            toolbox_archive(), reference, {path: program}, entrypoint=[path]
        )
    return archives


class KatibStack(HostParts):
    """PostgreSQL, Katib's db-manager and controller on the host; its webhooks on the cluster."""

    error = KatibError

    def __init__(
        self,
        plane: ControlPlane,
        directory: Path,
        network: NetworkConfig,
        load_image: Callable[[Path], None],
        options: KatibOptions,
    ) -> None:
        super().__init__(plane, directory)
        self.network = network
        self.load_image = load_image
        self.options = options
        self._db: Database | None = None
        self._files: ControllerFiles | None = None
        #: db-manager's `127.0.0.1:port` and its gate's `bridge:port`, once started.
        self.db_manager_address: str | None = None
        self.gate_address: str | None = None

    def start(self, timeout: float = 120.0) -> KatibStack:
        """Start it all; raises KatibError (what failed and its log)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            check_can_run()
            self._apply_definitions()
            for archive in image_archives().values():
                self.load_image(archive)
            gate = self._start_gate(self.start_db_manager(timeout), timeout)
            self._start_controller(gate, timeout)
        except BuildError as err:
            self.stop()
            raise KatibError(str(err)) from err
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Webhook configurations, then the controller, db-manager, PostgreSQL; safe twice."""
        self._delete_webhooks()
        for name in ("katib-controller", "katib-db-gate", "katib-db-manager", "postgres"):
            proc = self.procs.pop(name, None)
            if proc is not None:
                stop_process(proc, signal.SIGTERM, grace=10.0)
        if self._db is not None:
            self._db.remove()
            self._db = None
        if self._files is not None:
            self._files.remove()
            self._files = None

    # -- parts -------------------------------------------------------------------------------
    def _apply_definitions(self) -> None:
        for crd in self.options.job_crds:
            self._apply_file(crd)
        try:
            self._wait_established([TFJOB_CRD], timeout=10.0)
        except KatibError:
            raise KatibError(
                f"the {TFJOB_CRD} CRD is not installed: katib-controller watches TFJob trials "
                "only if it is there when it starts. Install TaaS's chart first (or start the "
                "cluster with `--katib`, which applies TaaS's CRD)."
            ) from None
        source = config.katib_source()
        for crd in config.crd_files(source):
            self._apply_file(crd)
        self._wait_established(config.crd_names(source))
        namespace = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": config.KATIB_NAMESPACE},
        }
        self._apply(
            [namespace, *config.rbac(source, CONTROLLER_USER), *config.gate_rbac(GATE_USER)]
        )

    def start_db_manager(self, timeout: float = 120.0) -> str:
        """PostgreSQL with a database `katib`, then db-manager on loopback; returns its
        `127.0.0.1:port` (`stop()` stops them)."""
        self._db = db = Database.create()
        with self.log("postgres").open("ab") as log:
            done = subprocess.run(db.initdb_argv(), stdout=log, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            raise KatibError(f"initdb failed (exit {done.returncode}); log {self.log('postgres')}")
        (db_port,) = free_ports(1)
        self._spawn("postgres", db.server_argv(db_port), f"tcp://127.0.0.1:{db_port}")
        self._wait_up(["postgres"], timeout)
        env = {"PGPASSWORD": db.password, "PATH": "/usr/bin:/bin"}
        created = subprocess.run(
            db.create_database_argv(db_port), env=env, capture_output=True, text=True
        )
        if created.returncode != 0:
            raise KatibError(f"creating Katib's database failed: {created.stderr.strip()}")
        (manager_port,) = free_ports(1)
        self._spawn(
            "katib-db-manager",
            db_manager_argv(manager_port),
            f"tcp://127.0.0.1:{manager_port}",
            env=db_manager_env(db, db_port),
        )
        self._wait_up(["katib-db-manager"], timeout)
        self.db_manager_address = f"127.0.0.1:{manager_port}"
        return self.db_manager_address

    def _start_gate(self, db_manager: str, timeout: float) -> str:
        """db-manager's gate on the bridge address (gate.py); returns its address, where the
        controller and the collectors find db-manager."""
        address = self.network.host_address
        (gate_port,) = free_ports(1, host=address)
        gate = f"{address}:{gate_port}"
        argv = gate_argv(gate, db_manager, self.plane.kubeconfig_for(GATE_USER))
        self._spawn("katib-db-gate", argv, f"tcp://{gate}")
        self._wait_up(["katib-db-gate"], timeout)
        self.gate_address = gate
        return gate

    def _start_controller(self, db_manager: str, timeout: float) -> None:
        webhook, metrics, health = free_ports(3)
        ports = config.ControllerPorts(webhook=webhook, metrics=metrics, health=health)
        katib_config = config.katib_config(ports, IMAGES)
        self._apply([config.config_map(katib_config)])
        self._files = files = ControllerFiles.create(
            self.directory / "controller",
            self.plane.issue_server_certificate,
            resolv_conf(self.network.host_address, self.network.cluster_domain),
            yaml.safe_dump(katib_config),
        )
        kubeconfig = self.plane.kubeconfig_for(CONTROLLER_USER)
        address, port = db_manager.rsplit(":", 1)
        self._spawn(
            "katib-controller",
            controller_argv(files),
            f"http://127.0.0.1:{health}/readyz",
            env=controller_env(kubeconfig, address, int(port)),
        )
        self._wait_up(["katib-controller"], timeout)
        ca = Path(self.plane.ca_file).read_bytes()
        endpoint = config.WebhookEndpoint(
            base_url=f"https://127.0.0.1:{webhook}",
            ca_bundle_b64=base64.b64encode(ca).decode(),
        )
        webhooks = config.webhook_configurations(config.katib_source(), endpoint, CONTROLLER_USER)
        self._apply_webhooks(webhooks)
