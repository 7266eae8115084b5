"""The cluster's image registry: CNCF distribution (built from its Go module), over TLS: pulls
on the host's address on the cluster's bridge, which every node reaches; pushes on loopback,
with this run's credentials.

    registry = Registry(run_dir, storage, network.host_address)
    registry.start(plane)                  # serving certificate from the cluster's CA; waits
    registry.address                       # "10.244.0.1:5000": nodes pull <address>/<prefix>/...
    registry.push_address                  # "127.0.0.1:5001": push there (same repositories)
    registry.auth_file                     # buildah's --authfile (REGISTRY_AUTH_FILE) for it
    registry.hosts_dir                     # containerd's `config_path` (certs.d/<address>/)
    registry.cert_dir                      # buildah's --cert-dir for this registry
    registry.stop()

Nodes pull from it as from any registry: each node's containerd reads
`<hosts_dir>/<address>/hosts.toml` (its CA is the cluster's), so a pod's image
`<address>/taas/taas-trainer:0.1.0` is pulled, never imported. The loopback address would not do:
a node of a many-node cluster has its own network namespace, whose loopback is its own.

Storage is `<cache>/node/registry`, kept between runs like the nodes' containerd stores, so a
second push sends only new layers; each start first garbage-collects the manifests no tag names
any more (what re-pushing a tag leaves), so rebuilds do not pile up.

Two distribution processes share that storage (repositories are keyed by name, so what is pushed
as `127.0.0.1:5001/taas/x` is pulled as `10.244.0.1:5000/taas/x`):
- the pull side on the bridge address, in distribution's read-only mode
  (`storage.maintenance.readonly`): anything that reaches the bridge (nodes, pods) may pull, and
  every push or delete is refused. It has no authentication (containerd pulls without
  credentials), as a node's pulls need none;
- the push side on 127.0.0.1 only (no pod reaches the host's loopback), with htpasswd
  authentication: one user `taas` with a password made for each run, kept in
  `<run>/registry/htpasswd` (bcrypt, from the C library's crypt(3)) and
  `<run>/registry/auth.json` (containers-auth.json, what buildah's `--authfile` and
  `REGISTRY_AUTH_FILE` read), both 0600, root's. Every pusher of this repository reads it from
  there (`taas-controlplane images --push`, `taas-controlplane env`'s `REGISTRY_AUTH_FILE`).
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import secrets
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

from pydantic import BaseModel

from taas_controlplane.build.binaries import ensure
from taas_controlplane.cluster.machine_lock import running_directory
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_controlplane.parts import log_tail
from taas_operator.processes import spawn
from taas_operator.processes import stop as stop_process

#: The registry's port on the bridge address (one cluster per machine, so one registry).
PORT = 5000
#: Its push side's port on 127.0.0.1.
PUSH_PORT = 5001
#: The one user of the push side.
PUSH_USER = "taas"
#: bcrypt's cost: the password is 128 random bits, so the cost guards nothing, and each of a
#: push's requests pays it (htpasswd's own default is 5).
BCRYPT_COST = 5
#: No tracing exporter (its default would send spans to an OTLP collector on loopback).
_ENV = {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}


class RegistryError(RuntimeError):
    """The registry did not start; the message has its log's tail."""


def hosts_dir(run_dir: Path) -> Path:
    """A run's containerd `config_path`: one directory per registry host, `hosts.toml` in it."""
    return run_dir / "registry" / "certs.d"


class RunningRegistry(BaseModel):
    """Where a running cluster's registry is: its pull and push `host:port`, the directory of
    its CA (for `--cert-dir`) and the push side's credentials (for `--authfile`)."""

    address: str
    push_address: str
    cert_dir: Path
    auth_file: Path


def auth_file(run_dir: Path) -> Path:
    """A run's push credentials (containers-auth.json)."""
    return run_dir / "registry" / "auth.json"


def running_registry() -> RunningRegistry | None:
    """The running cluster's registry, if a cluster runs."""
    run_dir = running_directory()
    found = [] if run_dir is None else sorted(hosts_dir(run_dir).glob("*/ca.crt"))
    if run_dir is None or not found or not auth_file(run_dir).exists():
        return None
    (push_address,) = json.loads(auth_file(run_dir).read_text())["auths"]
    return RunningRegistry(
        address=found[0].parent.name,
        push_address=push_address,
        cert_dir=found[0].parent,
        auth_file=auth_file(run_dir),
    )


def push_files(destination: str) -> tuple[Path | None, Path | None]:
    """For `images --push DESTINATION`: the CA directory and push credentials of the running
    cluster's registry when `destination` is its push side (else none); its pull side, which
    is read-only, is a RegistryError naming the push side."""
    running = running_registry()
    host = destination.strip().split("/", 1)[0]
    if running is None or host not in (running.address, running.push_address):
        return None, None
    if host == running.address:
        raise RegistryError(
            f"--push {destination}: {host} is the cluster registry's pull side, read-only (nodes "
            f"and pods pull there); push to {running.push_address}/... ($TAAS_REGISTRY_PUSH): the "
            f"same repositories, pulled as {host}/..."
        )
    return running.cert_dir, running.auth_file


def bcrypt_hash(password: str, cost: int = BCRYPT_COST) -> str:
    """A bcrypt hash (`$2b$...`, what distribution's htpasswd reads) of `password`, by the C
    library's crypt(3) (Debian's libxcrypt, salt from the kernel's random source)."""
    lib = ctypes.CDLL("libcrypt.so.1")
    lib.crypt_gensalt.restype = lib.crypt.restype = ctypes.c_char_p
    lib.crypt_gensalt.argtypes = [ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]
    lib.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    setting = lib.crypt_gensalt(b"$2b$", cost, None, 0)
    hashed = lib.crypt(password.encode(), setting) if setting else None
    if not hashed or not hashed.startswith(b"$2b$"):
        raise RegistryError("the C library's crypt(3) made no bcrypt hash (libxcrypt needed)")
    return str(hashed.decode())


def write_credentials(directory: Path, push_address: str) -> tuple[Path, Path]:
    """A new password for `PUSH_USER`: `directory/htpasswd` for the registry and
    `directory/auth.json` for buildah, both 0600. Returns (htpasswd, auth.json)."""
    password = secrets.token_hex(16)
    token = base64.b64encode(f"{PUSH_USER}:{password}".encode()).decode()
    files = (directory / "htpasswd", directory / "auth.json")
    contents = (
        f"{PUSH_USER}:{bcrypt_hash(password)}\n",
        json.dumps({"auths": {push_address: {"auth": token}}}, indent=2) + "\n",
    )
    for path, text in zip(files, contents, strict=True):
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(text)
    return files


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
    """One distribution registry, its pull and push sides: their configs, certificate,
    credentials and trust files under `run_dir`."""

    def __init__(
        self, run_dir: Path, storage: Path, host: str, port: int = PORT, push_port: int = PUSH_PORT
    ) -> None:
        self.run_dir = run_dir
        self.directory = run_dir / "registry"
        self.storage = storage
        self.address = f"{host}:{port}"
        self.push_address = f"127.0.0.1:{push_port}"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def hosts_dir(self) -> Path:
        return hosts_dir(self.run_dir)

    @property
    def cert_dir(self) -> Path:
        """The CA of this registry (both sides), for `buildah --cert-dir` (and podman's)."""
        return self.hosts_dir / self.address

    @property
    def auth_file(self) -> Path:
        """The push side's credentials, for `buildah push --authfile` (`REGISTRY_AUTH_FILE`)."""
        return auth_file(self.run_dir)

    @property
    def log(self) -> Path:
        """The pull side's log (containerd's requests)."""
        return self.run_dir / "registry.log"

    @property
    def push_log(self) -> Path:
        return self.run_dir / "registry-push.log"

    def _configs(self, plane: ControlPlane, htpasswd: Path) -> tuple[Path, Path]:
        host = self.address.rsplit(":", 1)[0]
        hosts = sorted({host, "127.0.0.1"})
        pair = plane.issue_server_certificate("registry-serving", "taas-registry", hosts)
        tls = {"certificate": str(pair.cert), "key": str(pair.key)}
        storage = {
            "filesystem": {"rootdirectory": str(self.storage)},
            "delete": {"enabled": True},  # for the garbage collection at start
        }
        pull = {
            "version": 0.1,
            "log": {"level": "info", "formatter": "text"},
            "storage": {**storage, "maintenance": {"readonly": {"enabled": True}}},
            "http": {"addr": self.address, "tls": tls, "draintimeout": "5s"},
        }
        push = {
            **pull,
            "storage": storage,
            "http": {"addr": self.push_address, "tls": tls, "draintimeout": "5s"},
            "auth": {"htpasswd": {"realm": "taas-registry", "path": str(htpasswd)}},
        }
        paths = (self.directory / "config.yml", self.directory / "config-push.yml")
        for path, config in zip(paths, (pull, push), strict=True):
            path.write_text(json.dumps(config, indent=2))  # JSON is YAML
        return paths

    def start(self, plane: ControlPlane, timeout: float = 60.0) -> None:
        """Write the configs, credentials and trust files, garbage-collect the storage, serve
        both sides; wait until each answers `GET /v2/` over TLS with the cluster's CA (the push
        side with the credentials)."""
        binary = str(ensure("registry"))
        for address in (self.address, self.push_address):
            _check_free(address)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.storage.mkdir(parents=True, exist_ok=True)
        htpasswd, auth = write_credentials(self.directory, self.push_address)
        pull, push = self._configs(plane, htpasswd)
        trust_files(self.hosts_dir, self.address, Path(plane.ca_file))
        with self.log.open("ab") as log:
            subprocess.run(
                [binary, "garbage-collect", "--delete-untagged", str(push)],
                stdout=log, stderr=subprocess.STDOUT, env=_ENV, timeout=600, check=False,
            )  # fmt: skip
        for name, config, log_path in (("pull", pull, self.log), ("push", push, self.push_log)):
            with log_path.open("ab") as log:
                self.procs[name] = spawn(
                    [binary, "serve", str(config)],
                    env=_ENV,
                    death_signal=signal.SIGTERM,
                    stdout=log,
                )
        context = ssl.create_default_context(cafile=str(plane.ca_file))
        (credentials,) = json.loads(auth.read_text())["auths"].values()
        deadline = time.monotonic() + timeout
        for name, address, log_path, token in (
            ("pull", self.address, self.log, None),
            ("push", self.push_address, self.push_log, credentials["auth"]),
        ):
            while not _answers(f"https://{address}/v2/", context, token):
                proc = self.procs[name]
                if proc.poll() is not None:
                    raise RegistryError(
                        f"the registry's {name} side exited ({proc.returncode}); log "
                        f"{log_path}:\n{log_tail(log_path)}"
                    )
                if time.monotonic() > deadline:
                    raise RegistryError(
                        f"the registry's {name} side did not answer after {timeout:.0f}s; "
                        f"log {log_path}"
                    )
                time.sleep(0.2)

    def exited(self) -> bool:
        return any(proc.poll() is not None for proc in self.procs.values())

    def stop(self) -> None:
        for proc in self.procs.values():
            stop_process(proc, signal.SIGTERM, grace=10.0)
        self.procs = {}


def _check_free(address: str) -> None:
    """Refuse to start where something listens already (it would answer `/v2/` for us)."""
    host, port = address.rsplit(":", 1)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, int(port)))
        except OSError as err:
            raise RegistryError(
                f"cannot listen on {address} for the cluster's registry: {err.strerror}; "
                f"stop what listens there (`ss -ltnp | grep :{port}` shows it)"
            ) from None


def _answers(url: str, context: ssl.SSLContext, basic: str | None = None) -> bool:
    headers = {} if basic is None else {"Authorization": f"Basic {basic}"}
    try:
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return int(response.status) == 200
    except OSError:
        return False
