"""Start etcd + kube-apiserver on free 127.0.0.1 ports, with their own CA, RBAC and kubeconfigs.

What runs is only the API server and its store, as controller-runtime's envtest does: no
scheduler, kubelet, controller-manager, garbage collector, namespace controller or default
ServiceAccounts. Pods are stored but stay Pending; tests move them through phases by writing the
pods/status subresource, and delete owned objects themselves (owner references do not cascade).

`ControlPlane(for_nodes=True, bind_address=<bridge address>)` is the same pair set up for a
whole cluster (cluster/cluster.py): listening where pods reach it, Node+RBAC authorization with the
NodeRestriction and ServiceAccount admission plugins, and a client certificate for kubelets.

Both processes run in their own process group and get SIGTERM when their parent dies
(`taas_operator.processes.spawn`, the project's one helper for child processes), so a killed
test run leaves nothing behind; `stop()` ends them explicitly.
"""

from __future__ import annotations

import ipaddress
import json
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import yaml
from pydantic import BaseModel

from taas_controlplane.build.binaries import KUBERNETES_VERSION, ensure
from taas_controlplane.controlplane.certificates import (
    CertificateAuthority,
    KeyPair,
    write_service_account_keys,
)
from taas_controlplane.parts import Parts, log_tail
from taas_operator.processes import free_ports, spawn
from taas_operator.processes import stop as stop_process

ADMIN_USER = "taas-admin"
SERVICE_CIDR = "10.0.0.0/24"


class ControlPlaneError(RuntimeError):
    """The control plane did not come up; the message carries the log tail."""


class Endpoints(BaseModel):
    """Ports of one control plane."""

    etcd_client: int
    etcd_peer: int
    apiserver: int


class ControlPlane(Parts):
    """One etcd + kube-apiserver pair. Use as a context manager or call start()/stop()."""

    def __init__(
        self,
        directory: Path | None = None,
        audit_log: bool = False,
        *,
        audit_users: Sequence[str] = (),
        bind_address: str = "127.0.0.1",
        service_cidr: str = SERVICE_CIDR,
        for_nodes: bool = False,
    ) -> None:
        self._own_dir = directory is None
        self.directory = directory or Path(tempfile.mkdtemp(prefix="taas-controlplane-"))
        #: Only these users' requests are logged (all when empty): a busy cluster's leases,
        #: binds and status updates would otherwise fill the log and cost the apiserver CPU.
        self.audit_users = tuple(audit_users)
        self.audit_log = audit_log or bool(self.audit_users)
        self.bind_address = bind_address
        self.service_cidr = service_cidr
        self.for_nodes = for_nodes
        self.etcd: subprocess.Popen[bytes] | None = None
        self.apiserver: subprocess.Popen[bytes] | None = None
        self.endpoints: Endpoints | None = None
        self._ca: CertificateAuthority | None = None
        self._admin: KeyPair | None = None

    # -- public surface ----------------------------------------------------------------------
    @property
    def server(self) -> str:
        assert self.endpoints, "control plane not started"
        return f"https://{self.bind_address}:{self.endpoints.apiserver}"

    @property
    def ca_file(self) -> str:
        assert self._ca, "control plane not started"
        return str(self._ca.cert_file)

    @property
    def kubeconfig(self) -> str:
        return str(self.directory / "admin.kubeconfig")

    @property
    def version(self) -> str:
        return KUBERNETES_VERSION

    def kubeconfig_for(self, user: str, groups: list[str] | None = None) -> str:
        """Write a kubeconfig that authenticates as `user` in `groups` (a client certificate)."""
        assert self._ca, "control plane not started"
        stem = "user-" + "".join(c if c.isalnum() else "-" for c in user)
        pair = self._ca.issue(stem, user, organizations=groups or [])
        path = self.directory / f"{stem}.kubeconfig"
        self._write_kubeconfig(path, user, pair)
        return str(path)

    def issue_server_certificate(self, stem: str, common_name: str, hosts: list[str]) -> KeyPair:
        """A serving certificate signed by this control plane's CA (e.g. a kubelet's)."""
        assert self._ca, "control plane not started"
        return self._ca.issue(stem, common_name, hosts=hosts)

    def kubectl(
        self,
        *args: str,
        kubeconfig: str | None = None,
        check: bool = True,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this control plane (admin unless `kubeconfig` is given)."""
        return subprocess.run(
            ["kubectl", "--kubeconfig", kubeconfig or self.kubeconfig, *args],
            capture_output=True,
            text=True,
            check=check,
            input=input,
            timeout=120,
        )

    def start(self, timeout: float = 90.0) -> ControlPlane:
        etcd_bin, apiserver_bin = ensure("etcd"), ensure("kube-apiserver")
        for attempt in range(3):  # a port taken between choosing and binding: choose again
            etcd_client, etcd_peer = free_ports(2)
            (apiserver,) = free_ports(1, host=self.bind_address)
            self.endpoints = Endpoints(
                etcd_client=etcd_client, etcd_peer=etcd_peer, apiserver=apiserver
            )
            try:
                self._prepare_files()
                self._start_etcd(etcd_bin)
                self._start_apiserver(apiserver_bin)
                self._wait_ready(timeout)
                return self
            except ControlPlaneError:
                self.stop(remove=False)
                if attempt == 2:
                    raise
        return self

    def stop(self, remove: bool = True) -> None:
        """Stop both processes (apiserver first) and, by default, remove the working files."""
        for proc in (self.apiserver, self.etcd):
            if proc is not None:
                stop_process(proc, signal.SIGTERM, grace=10.0)
        self.apiserver = self.etcd = None
        if remove and self._own_dir:
            shutil.rmtree(self.directory, ignore_errors=True)

    def stop_apiserver(self) -> None:
        """Stop only kube-apiserver (etcd keeps the data), e.g. for outage tests."""
        if self.apiserver is not None:
            stop_process(self.apiserver, signal.SIGTERM, grace=10.0)
            self.apiserver = None

    def start_apiserver(self, timeout: float = 90.0) -> None:
        """Start kube-apiserver again on the same port and data."""
        self._start_apiserver(ensure("kube-apiserver"))
        self._wait_ready(timeout)

    def pids(self) -> list[int]:
        return [p.pid for p in (self.etcd, self.apiserver) if p is not None]

    def exited(self) -> str | None:
        """etcd or kube-apiserver when that process has exited (None while both run)."""
        for name, proc in (("etcd", self.etcd), ("kube-apiserver", self.apiserver)):
            if proc is not None and proc.poll() is not None:
                return name
        return None

    # -- internals ---------------------------------------------------------------------------
    def _prepare_files(self) -> None:
        pki_dir = self.directory / "pki"
        self._ca = CertificateAuthority.create(pki_dir)
        self._ca.issue(
            "apiserver",
            "kube-apiserver",
            hosts=[
                "127.0.0.1",
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                str(ipaddress.ip_network(self.service_cidr)[1]),  # the `kubernetes` ClusterIP
                *([self.bind_address] if self.bind_address != "127.0.0.1" else []),
            ],
        )
        write_service_account_keys(pki_dir)
        if self.for_nodes:  # how kube-apiserver authenticates to kubelets (logs, exec)
            self._ca.issue("apiserver-kubelet-client", "kube-apiserver", ["system:masters"])
        self._admin = self._ca.issue("admin", ADMIN_USER, organizations=["system:masters"])
        self._write_kubeconfig(Path(self.kubeconfig), ADMIN_USER, self._admin)

    def _write_kubeconfig(self, path: Path, user: str, pair: KeyPair) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "taas",
                    "cluster": {"server": self.server, "certificate-authority": self.ca_file},
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {"client-certificate": str(pair.cert), "client-key": str(pair.key)},
                }
            ],
            "contexts": [{"name": "taas", "context": {"cluster": "taas", "user": user}}],
            "current-context": "taas",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))

    def _spawn(self, name: str, cmd: list[str]) -> subprocess.Popen[bytes]:
        with (self.directory / f"{name}.log").open("ab") as log:
            return spawn(cmd, death_signal=signal.SIGTERM, stdout=log)

    def _start_etcd(self, binary: Path) -> None:
        assert self.endpoints
        data = self.directory / "etcd-data"
        client = f"http://127.0.0.1:{self.endpoints.etcd_client}"
        peer = f"http://127.0.0.1:{self.endpoints.etcd_peer}"
        self.etcd = self._spawn(
            "etcd",
            [
                str(binary),
                "--name=taas",
                f"--data-dir={data}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=taas={peer}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )

    def _start_apiserver(self, binary: Path) -> None:
        assert self.endpoints
        pki = self.directory / "pki"
        args = [
            str(binary),
            f"--etcd-servers=http://127.0.0.1:{self.endpoints.etcd_client}",
            f"--secure-port={self.endpoints.apiserver}",
            f"--bind-address={self.bind_address}",
            f"--advertise-address={self.bind_address}",
            f"--cert-dir={pki}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--service-cluster-ip-range={self.service_cidr}",
            "--allow-privileged=true",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--profiling=false",
            "--v=1",
        ]
        if self.for_nodes:
            args += [
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
                f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
                f"--kubelet-certificate-authority={pki / 'ca.crt'}",
                "--kubelet-preferred-address-types=InternalIP",
            ]
        else:
            args += ["--authorization-mode=RBAC", "--disable-admission-plugins=ServiceAccount"]
        if self.audit_log:
            policy = self.directory / "audit-policy.yaml"
            policy.write_text(
                json.dumps(
                    {
                        "apiVersion": "audit.k8s.io/v1",
                        "kind": "Policy",
                        "omitStages": ["RequestReceived"],
                        "rules": (
                            [
                                {"level": "Metadata", "users": list(self.audit_users)},
                                {"level": "None"},
                            ]
                            if self.audit_users
                            else [{"level": "Metadata"}]
                        ),
                    }
                )
            )
            args += [
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.directory / 'audit.log'}",
            ]
        self.apiserver = self._spawn("kube-apiserver", args)

    def _ssl_context(self) -> ssl.SSLContext:
        assert self._admin
        context = ssl.create_default_context(cafile=self.ca_file)
        context.load_cert_chain(str(self._admin.cert), str(self._admin.key))
        return context

    def get(self, path: str, timeout: float = 5.0) -> bytes:
        """GET an API path as admin (e.g. `/metrics`), raising on HTTP errors."""
        with urllib.request.urlopen(
            self.server + path, context=self._ssl_context(), timeout=timeout
        ) as response:
            return bytes(response.read())

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last_error = ""
        while time.monotonic() < deadline:
            for name, proc in (("etcd", self.etcd), ("kube-apiserver", self.apiserver)):
                if proc is not None and proc.poll() is not None:
                    raise ControlPlaneError(
                        f"{name} exited with code {proc.returncode} during start-up; "
                        f"log {self.directory / (name + '.log')}:\n"
                        f"{log_tail(self.directory / (name + '.log'))}"
                    )
            try:
                if self.get("/readyz") == b"ok":
                    return
            except Exception as err:  # any failure means "not ready yet"
                last_error = str(err)
            time.sleep(0.25)
        raise ControlPlaneError(
            f"kube-apiserver not ready after {timeout:.0f}s (last error: {last_error}); "
            f"log:\n{log_tail(self.directory / 'kube-apiserver.log')}"
        )
