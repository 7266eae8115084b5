"""Start and stop the schedulers of gang jobs against one control plane, the same way everywhere.

    options = SchedulingOptions(coscheduling=True, kueue=True)
    with SchedulingStack(plane, directory, options) as stack:   # plane: a started ControlPlane
        stack.exited()   # the name of a part that has exited, if any

The bare control plane of the tests, the one-node cluster (`cluster up --gang scheduler-plugins
--kueue`) and the simulated cluster (`sim up ... --gang ... --kueue`) all start their
schedulers through this class. Start order: scheduler-plugins' CRDs, its scheduler and
controller (each healthy); then Kueue's CRDs and RBAC, its manager (ready: caches synced,
webhook server serving), and only then its webhook configurations, so no request is ever sent
to a Kueue that is not there yet. Stop order: Kueue's webhook configurations first (Kueue's pod
webhook fails closed: left behind, it would refuse every pod), then Kueue, then the
scheduler-plugins processes. CRDs and the objects made with them stay, as with any uninstall
that keeps its CRDs. Logs: `<directory>/<part>.log`. Every process runs in its own process
group and gets SIGTERM if this process dies (`taas_operator.processes.spawn`).
"""

from __future__ import annotations

import signal
from pathlib import Path

import yaml
from pydantic import BaseModel, Field

from taas_controlplane.build.binaries import BuildError
from taas_controlplane.cluster.addon_processes import HostParts
from taas_controlplane.cluster.scheduling import coscheduling, kueue_config, kueue_process
from taas_controlplane.cluster.scheduling.coscheduling import DEFAULT_SCHEDULER_NAME
from taas_controlplane.cluster.scheduling.kueue_process import KueueError
from taas_controlplane.cluster.scheduling.kustomize import KustomizeError, load_documents
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.processes import free_ports
from taas_operator.processes import stop as stop_process

SCHEDULER_PLUGINS_USER = "system:taas:scheduler-plugins"
KUEUE_USER = "system:taas:kueue"


class SchedulingError(RuntimeError):
    """A scheduler did not come up; the message names it and its log."""


class SchedulingOptions(BaseModel):
    """Which schedulers to run, and how."""

    #: scheduler-plugins' coscheduling scheduler and controller, with their CRDs.
    coscheduling: bool = False
    #: the schedulerName it runs under (TaaS's `--gang-pod-scheduler-name` must match).
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    #: Kueue's manager with its CRDs, RBAC and webhooks.
    kueue: bool = False
    #: Kueue's `kubeflow.org/tfjob` integration on (else only its defaults, `pod` among them:
    #: the plain pod-group way, TaaS's `--kueue-pod-groups`).
    kueue_tfjob: bool = True
    #: Kueue's `waitForPodsReady.timeout` in seconds: how long an admitted job may take to have
    #: all its pods ready before Kueue evicts and requeues it. None: Kueue's default (v0.19: on,
    #: 30 minutes).
    kueue_pods_ready_timeout: float | None = Field(default=None, gt=0)
    #: CRD files of the jobs Kueue is to manage (TaaS's TFJob CRD), applied before it starts:
    #: Kueue starts an integration whose API is missing only when a poll finds it (backing
    #: off to every 2 minutes).
    job_crds: list[Path] = []

    @property
    def any(self) -> bool:
        return self.coscheduling or self.kueue


class SchedulingStack(HostParts):
    """scheduler-plugins (coscheduling) and/or Kueue running against one control plane."""

    error = SchedulingError

    def __init__(self, plane: ControlPlane, directory: Path, options: SchedulingOptions) -> None:
        super().__init__(plane, directory)
        self.options = options

    # -- public surface ----------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> SchedulingStack:
        """Start what the options ask for; raises SchedulingError (what failed and its log)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            if self.options.kueue:
                kueue_process.check_can_run()
                for crd in self.options.job_crds:
                    self._apply_file(crd)
                names = [load_documents(c)[0]["metadata"]["name"] for c in self.options.job_crds]
                self._wait_established(names)
            if self.options.coscheduling:
                self._start_coscheduling(timeout)
            if self.options.kueue:
                self._start_kueue(timeout)
        except (BuildError, KueueError, KustomizeError) as err:
            self.stop()
            raise SchedulingError(str(err)) from err
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Webhook configurations, then Kueue, then scheduler-plugins; safe to call twice."""
        self._delete_webhooks()
        for name in ("kueue", "scheduler-plugins-scheduler", "scheduler-plugins-controller"):
            proc = self.procs.pop(name, None)
            if proc is not None:
                stop_process(proc, signal.SIGTERM, grace=10.0)

    # -- scheduler-plugins -------------------------------------------------------------------
    def _start_coscheduling(self, timeout: float) -> None:
        source = coscheduling.scheduler_plugins_source()
        for crd in coscheduling.crd_files(source):
            self._apply_file(crd)
        self._wait_established([coscheduling.PODGROUP_CRD, coscheduling.ELASTICQUOTA_CRD])
        kubeconfig = self.plane.kubeconfig_for(SCHEDULER_PLUGINS_USER, ["system:masters"])
        config = self.directory / "scheduler-plugins.yaml"
        config.write_text(
            yaml.safe_dump(
                coscheduling.scheduler_config(source, kubeconfig, self.options.scheduler_name)
            )
        )
        scheduler_port, metrics_port, probe_port = free_ports(3)
        self._spawn(
            "scheduler-plugins-scheduler",
            coscheduling.scheduler_argv(config, kubeconfig, scheduler_port),
            f"https://127.0.0.1:{scheduler_port}/healthz",
        )
        self._spawn(
            "scheduler-plugins-controller",
            coscheduling.controller_argv(kubeconfig, metrics_port, probe_port),
            f"http://127.0.0.1:{probe_port}/healthz",
        )
        self._wait_up(["scheduler-plugins-scheduler", "scheduler-plugins-controller"], timeout)

    # -- Kueue -------------------------------------------------------------------------------
    def _start_kueue(self, timeout: float) -> None:
        source = kueue_config.kueue_source()
        files = kueue_process.KueueFiles.create(
            self.directory / "kueue", self.plane.issue_server_certificate
        )
        webhook_port, health_port, metrics_port = free_ports(3)
        endpoint = kueue_config.WebhookEndpoint(
            base_url=f"https://127.0.0.1:{webhook_port}",
            ca_pem=Path(self.plane.ca_file).read_bytes(),
        )
        crds = kueue_config.crds(source, endpoint)
        self._apply(crds + kueue_config.rbac(source, KUEUE_USER))
        self._wait_established([c["metadata"]["name"] for c in crds])
        config = self.directory / "kueue.yaml"
        ports = kueue_config.ManagerPorts(
            webhook=webhook_port, health=health_port, metrics=metrics_port
        )
        enabled = kueue_config.frameworks(source, tfjob=self.options.kueue_tfjob)
        config.write_text(
            yaml.safe_dump(
                kueue_config.manager_config(
                    source,
                    ports,
                    files.cert_dir,
                    enabled,
                    self.options.kueue_pods_ready_timeout,
                )
            )
        )
        self._spawn(
            "kueue",
            kueue_process.kueue_argv(files, config, self.plane.kubeconfig_for(KUEUE_USER)),
            f"http://127.0.0.1:{health_port}/readyz",
        )
        self._wait_up(["kueue"], timeout)
        webhooks = kueue_config.webhook_configurations(source, endpoint)
        self._apply_webhooks(webhooks)
