"""The four contestants and how each is installed on a fresh control plane and started.

    CONTROLLERS: dict[str, Controller]    # "taas", "kubeflow", "kubeflow8", "floor"
    Controller.install(plane)             # CRD (and Kubeflow's webhook-cert Secret); again
                                          # on the same plane: the CRD applied over the last
    Controller.start(kubeconfig, workdir, extra_args) -> RunningController
    RunningController(.pid, .alive(), .log_tail(), .stop(), .kill())

- taas: `python -m taas_operator.controller --kubeconfig K --all-namespaces` (what
  `taas operator` runs), defaults otherwise (NetworkPolicy per job on), with TaaS's CRD.
- kubeflow: the training-operator v1.8.1 binary built from the Go module proxy
  (`taas_controlplane.build.binaries.ensure("training-operator")`), `--enable-scheme=tfjob`, out of
  cluster, with the TFJob CRD shipped in its module; it wants a Secret
  `training-operator-webhook-cert` in its namespace (MY_POD_NAMESPACE) before it starts, and
  the certificates its rotator writes there mounted at KUBEFLOW_CERT_DIR (copied here). No
  ValidatingWebhookConfiguration is registered (the apiserver could not reach its webhook server).
  Its default `--controller-threads=1`.
- kubeflow8: the same binary at its best setting, `--controller-threads=8` (v1.8.1's only
  concurrency flag, `MaxConcurrentReconciles` of its TFJob controller; its docs recommend no
  value). Its client keeps controller-runtime's default rate limit (20 requests/s, bursts of
  30): v1.8.1 has no flag to change it.
- floor: `python -m bench.operator.floor`, no controller logic: watch TFJobs, create the
  planner's desired pods and services concurrently, nothing else (TaaS's CRD).

Every controller runs in its own process group under the identity `CONTROLLER_USER` (group
system:masters), so the audit log tells its requests from the harness's.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from taas_controlplane.cluster.addon_processes import FIELD_MANAGER
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.processes import free_ports, spawn, stop

REPO_ROOT = Path(__file__).resolve().parents[2]
TAAS_CRD = REPO_ROOT / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml"
CONTROLLER_USER = "bench-controller"
CONTROLLER_GROUPS = ["system:masters"]
KUBEFLOW_NAMESPACE = "kubeflow"
KUBEFLOW_SECRET = "training-operator-webhook-cert"
#: Fixed in training-operator v1.8.1 (pkg/cert): where it expects the Secret mounted.
KUBEFLOW_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")


class ControllerError(RuntimeError):
    """A controller could not be installed or started."""


@dataclass
class RunningController:
    """A started controller process (own process group) and its log file."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "".join(text.splitlines(keepends=True)[-lines:])

    def kill(self) -> None:
        """SIGKILL the whole process group (a crash, for fault runs)."""
        stop(self.proc, signal.SIGKILL, grace=0)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the process group, SIGKILL after `grace` seconds."""
        stop(self.proc, signal.SIGTERM, grace)


def _spawn(name: str, cmd: list[str], workdir: Path, env: dict[str, str]) -> RunningController:
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"{name}.log"
    with log.open("ab") as handle:
        proc = spawn(cmd, env={**os.environ, **env}, cwd=REPO_ROOT, stdout=handle)
    return RunningController(name=name, proc=proc, log=log)


def apply_crd(plane: ControlPlane, path: Path, timeout_s: float = 90) -> None:
    """Apply a CRD server-side and wait until it is Established. Applied as taas-controlplane
    applies TaaS's CRD for Katib (`cluster up --katib`): one field manager, so each apply
    replaces the last CRD whole (bench.katib swaps controllers under one CRD object)."""
    plane.kubectl(
        "apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}",
        "-f", str(path),
    )  # fmt: skip
    deadline = time.monotonic() + timeout_s
    while True:
        done = plane.kubectl(
            "wait",
            "--for=condition=Established",
            "--timeout=30s",
            "crd/tfjobs.kubeflow.org",
            check=False,
        )
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise ControllerError(f"CRD {path.name} not Established: {done.stderr.strip()}")
        time.sleep(1)


@dataclass
class Controller:
    """One contestant."""

    name: str
    label: str
    extra_env: dict[str, str] = field(default_factory=dict)
    #: A Python process (py-spy can profile it).
    python: bool = True
    #: Restarting it among existing jobs means something (not the floor: it would make every
    #: object again).
    restartable: bool = True

    def crd(self) -> Path:
        return TAAS_CRD

    def install(self, plane: ControlPlane) -> None:
        apply_crd(plane, self.crd())

    def command(self, kubeconfig: str) -> list[str]:
        raise NotImplementedError

    def start(
        self, kubeconfig: str, workdir: Path, extra_args: Sequence[str] = ()
    ) -> RunningController:
        """Start it; `extra_args` go after its own (e.g. a gang scheduler's name)."""
        command = [*self.command(kubeconfig), *extra_args]
        return _spawn(self.name, command, workdir, self.extra_env)


class TaasController(Controller):
    def command(self, kubeconfig: str) -> list[str]:
        # the same code as `taas operator ...`, without depending on the console script
        return [
            sys.executable,
            "-m",
            "taas_operator.controller",
            "--kubeconfig",
            kubeconfig,
            "--all-namespaces",
            "--health-port",
            str(free_ports(1)[0]),
            "--metrics-port",
            str(free_ports(1)[0]),
        ]


@dataclass
class KubeflowController(Controller):
    threads: int = 1

    def crd(self) -> Path:
        from taas_controlplane.build.binaries import TRAINING_OPERATOR_VERSION

        gomodcache = subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True
        ).stdout.strip()
        path = (
            Path(gomodcache)
            / f"github.com/kubeflow/training-operator@{TRAINING_OPERATOR_VERSION}"
            / "manifests/base/crds/kubeflow.org_tfjobs.yaml"
        )
        if not path.exists():
            raise ControllerError(
                f"Kubeflow's TFJob CRD not found at {path}: build the training-operator first "
                "(python -m taas_controlplane build training-operator)."
            )
        return path

    def install(self, plane: ControlPlane) -> None:
        """Its CRD, its namespace (kept if there: Katib's objects live there too) and an empty
        webhook-cert Secret, made anew for each start (its rotator fills it in)."""
        super().install(plane)
        namespace = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": KUBEFLOW_NAMESPACE},
        }
        plane.kubectl("apply", "-f", "-", input=json.dumps(namespace))
        ns = ("-n", KUBEFLOW_NAMESPACE)
        plane.kubectl("delete", "secret", KUBEFLOW_SECRET, *ns, "--ignore-not-found")
        plane.kubectl("create", "secret", "generic", KUBEFLOW_SECRET, *ns)

    def start(
        self, kubeconfig: str, workdir: Path, extra_args: Sequence[str] = ()
    ) -> RunningController:
        shutil.rmtree(KUBEFLOW_CERT_DIR, ignore_errors=True)
        running = super().start(kubeconfig, workdir, extra_args)
        threading.Thread(
            target=_mount_webhook_cert, args=(kubeconfig, running), daemon=True
        ).start()
        return running

    def command(self, kubeconfig: str) -> list[str]:
        from taas_controlplane.build.binaries import ensure

        metrics_port, health_port, webhook_port = free_ports(3)
        return [
            str(ensure("training-operator")),
            f"--kubeconfig={kubeconfig}",
            "--enable-scheme=tfjob",
            f"--metrics-bind-address=127.0.0.1:{metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{health_port}",
            f"--webhook-server-port={webhook_port}",
            f"--controller-threads={self.threads}",
        ]


def _mount_webhook_cert(
    kubeconfig: str, running: RunningController, timeout_s: float = 120
) -> None:
    """Do what the kubelet's secret volume does in a cluster: copy the webhook Secret's
    tls.crt/tls.key (which the operator's cert rotator fills in) into the directory the
    operator waits on before it starts its controllers."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and running.alive():
        data = core.read_namespaced_secret(KUBEFLOW_SECRET, KUBEFLOW_NAMESPACE).data or {}
        if data.get("tls.crt") and data.get("tls.key"):
            KUBEFLOW_CERT_DIR.mkdir(parents=True, exist_ok=True)
            for key in ("tls.key", "tls.crt"):  # the crt last: its presence means "mounted"
                (KUBEFLOW_CERT_DIR / key).write_bytes(base64.b64decode(data[key]))
            return
        time.sleep(0.3)


class FloorController(Controller):
    def command(self, kubeconfig: str) -> list[str]:
        return [sys.executable, "-m", "bench.operator.floor", "--kubeconfig", kubeconfig]


CONTROLLERS: dict[str, Controller] = {
    "taas": TaasController("taas", "TaaS"),
    "kubeflow": KubeflowController(
        "kubeflow",
        "training-operator v1.8.1",
        {"MY_POD_NAMESPACE": KUBEFLOW_NAMESPACE},
        python=False,
    ),
    "kubeflow8": KubeflowController(
        "kubeflow8",
        "training-operator v1.8.1, 8 threads",
        {"MY_POD_NAMESPACE": KUBEFLOW_NAMESPACE},
        python=False,
        threads=8,
    ),
    "floor": FloorController("floor", "floor", restartable=False),
}


def wait_alive(running: RunningController, seconds: float) -> None:
    """Raise if the controller exits within `seconds` (a crash at start-up)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not running.alive():
            raise ControllerError(
                f"{running.name} exited with code {running.proc.returncode} at start-up:\n"
                f"{running.log_tail()}"
            )
        time.sleep(0.2)
