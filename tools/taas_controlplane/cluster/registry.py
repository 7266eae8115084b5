"""The cluster's image registry: CNCF distribution (built from its Go module), over TLS, on the
host's address on the cluster's bridge, which every node reaches.

    registry = Registry(run_dir, storage, network.host_address)
    registry.start(plane)                  # serving certificate from the cluster's CA; waits
    registry.address                       # "10.244.0.1:5000": push to <address>/<prefix>/...
    registry.hosts_dir                     # containerd's `config_path` (certs.d/<address>/)
    registry.cert_dir                      # buildah's --cert-dir for this registry
    registry.stop()

Nodes pull from it as from any registry: each node's containerd reads
`<hosts_dir>/<address>/hosts.toml` (its CA is the cluster's), so a pod's image
`<address>/taas/taas-trainer:0.1.0` is pulled, never imported. The loopback address would not do:
a node of a many-node cluster has its own network namespace, whose loopback is its own.

Storage is `<cache>/node/registry`, kept between runs like the nodes' containerd stores, so a
second push sends only new layers; each start first garbage-collects the manifests no tag names
any more (what re-pushing a tag leaves), so rebuilds do not pile up. No authentication, as
kind's local registry: whatever reaches the bridge address may push (the host and the pods).
"""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

from taas_controlplane.build.binaries import ensure
from taas_controlplane.cluster.machine_lock import running_directory
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_controlplane.parts import log_tail
from taas_operator.processes import spawn
from taas_operator.processes import stop as stop_process

#: The registry's port on the bridge address (one cluster per machine, so one registry).
PORT = 5000
#: No tracing exporter (its default would send spans to an OTLP collector on loopback).
_ENV = {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}


class RegistryError(RuntimeError):
    """The registry did not start; the message has its log's tail."""


def hosts_dir(run_dir: Path) -> Path:
    """A run's containerd `config_path`: one directory per registry host, `hosts.toml` in it."""
    return run_dir / "registry" / "certs.d"


def running_registry() -> tuple[str, Path] | None:
    """The running cluster's registry, if a cluster runs: its `host:port` and the directory of
    its CA (for `--cert-dir`)."""
    run_dir = running_directory()
    found = [] if run_dir is None else sorted(hosts_dir(run_dir).glob("*/ca.crt"))
    return (found[0].parent.name, found[0].parent) if found else None


def running_cert_dir(address: str) -> Path | None:
    """The CA directory of the running cluster's registry if `address` (`host:port`) is it."""
    running = running_registry()
    return running[1] if running is not None and running[0] == address else None


def trust_files(config_path: Path, address: str, ca_file: Path) -> Path:
    """Write `<config_path>/<address>/{hosts.toml,ca.crt}`: containerd's host configuration
    (pull and resolve over TLS, the cluster's CA) and, in the same directory, the CA as
    buildah's and podman's `--cert-dir` want it. Returns that directory."""
    directory = config_path / address
    directory.mkdir(parents=True, exist_ok=True)
    ca = directory / "ca.crt"
    ca.write_bytes(ca_file.read_bytes())
    (directory / "hosts.toml").write_text(
        f'server = "https://{address}"\n\n'
        f'[host."https://{address}"]\n'
        '  capabilities = ["pull", "resolve"]\n'
        f'  ca = "{ca}"\n'
    )
    return directory


class Registry:
    """One distribution registry: its config, certificate and trust files under `run_dir`."""

    def __init__(self, run_dir: Path, storage: Path, host: str, port: int = PORT) -> None:
        self.run_dir = run_dir
        self.directory = run_dir / "registry"
        self.storage = storage
        self.address = f"{host}:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def hosts_dir(self) -> Path:
        return hosts_dir(self.run_dir)

    @property
    def cert_dir(self) -> Path:
        """The CA of this registry, for `buildah push --cert-dir` (and podman's)."""
        return self.hosts_dir / self.address

    @property
    def log(self) -> Path:
        return self.run_dir / "registry.log"

    def _config(self, plane: ControlPlane) -> Path:
        host = self.address.rsplit(":", 1)[0]
        pair = plane.issue_server_certificate("registry-serving", "taas-registry", [host])
        config = {
            "version": 0.1,
            "log": {"level": "info", "formatter": "text"},
            "storage": {
                "filesystem": {"rootdirectory": str(self.storage)},
                "delete": {"enabled": True},  # for the garbage collection at start
            },
            "http": {
                "addr": self.address,
                "tls": {"certificate": str(pair.cert), "key": str(pair.key)},
                "draintimeout": "5s",
            },
        }
        path = self.directory / "config.yml"
        path.write_text(json.dumps(config, indent=2))  # JSON is YAML
        return path

    def start(self, plane: ControlPlane, timeout: float = 60.0) -> None:
        """Write the config and trust files, garbage-collect the storage, serve; wait until
        `GET /v2/` answers over TLS with the cluster's CA."""
        binary = str(ensure("registry"))
        self._check_free()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.storage.mkdir(parents=True, exist_ok=True)
        config = self._config(plane)
        trust_files(self.hosts_dir, self.address, Path(plane.ca_file))
        with self.log.open("ab") as log:
            subprocess.run(
                [binary, "garbage-collect", "--delete-untagged", str(config)],
                stdout=log, stderr=subprocess.STDOUT, env=_ENV, timeout=600, check=False,
            )  # fmt: skip
            self.proc = spawn(
                [binary, "serve", str(config)], env=_ENV, death_signal=signal.SIGTERM, stdout=log
            )
        context = ssl.create_default_context(cafile=str(plane.ca_file))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RegistryError(
                    f"the registry exited ({self.proc.returncode}); log {self.log}:\n"
                    f"{log_tail(self.log)}"
                )
            if _answers(f"https://{self.address}/v2/", context):
                return
            time.sleep(0.2)
        raise RegistryError(f"the registry did not answer after {timeout:.0f}s; log {self.log}")

    def _check_free(self) -> None:
        """Refuse to start where something listens already (it would answer `/v2/` for us)."""
        host, port = self.address.rsplit(":", 1)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((host, int(port)))
            except OSError as err:
                raise RegistryError(
                    f"cannot listen on {self.address} for the cluster's registry: {err.strerror}; "
                    f"stop what listens there (`ss -ltnp | grep :{port}` shows it)"
                ) from None

    def exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc, signal.SIGTERM, grace=10.0)
            self.proc = None


def _answers(url: str, context: ssl.SSLContext) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return int(response.status) == 200
    except OSError:
        return False
