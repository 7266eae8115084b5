"""Processes on the host that serve one control plane: what the schedulers and Katib share.

    class MyParts(HostParts):
        error = MyError                      # what start-up failures raise
    parts._apply(objects); parts._wait_established(crd_names)
    parts._spawn(name, argv, health_url); parts._wait_up([name], timeout)
    parts.exited(); parts.pids(); parts.log(name)

Each process runs in its own process group and gets SIGTERM if this process dies
(`taas_operator.processes.spawn`); its output goes to `<directory>/<name>.log`. Objects are
applied server-side as `taas-controlplane`.
"""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_controlplane.parts import Parts, log_tail
from taas_operator.processes import spawn

FIELD_MANAGER = "taas-controlplane"


class HostParts(Parts):
    """Processes started against `plane`, logging under `directory`."""

    #: The exception start-up failures raise (a subclass names its own).
    error: ClassVar[type[RuntimeError]] = RuntimeError

    def __init__(self, plane: ControlPlane, directory: Path) -> None:
        self.plane = plane
        self.directory = directory
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._health: dict[str, str] = {}  # part -> the URL that says it is up
        self._webhooks: list[str] = []  # kind/name of the webhook configurations made

    def exited(self) -> str | None:
        """The name of a part that has exited, if any."""
        return next((n for n, p in self.procs.items() if p.poll() is not None), None)

    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self.procs.items()}

    def log(self, name: str) -> Path:
        return self.directory / f"{name}.log"

    def _apply_webhooks(self, webhooks: list[dict[str, Any]]) -> None:
        """Apply webhook configurations, remembered first: a failure half-way still removes
        what was made (`_delete_webhooks`)."""
        self._webhooks = [f"{w['kind'].lower()}/{w['metadata']['name']}" for w in webhooks]
        self._apply(webhooks)

    def _delete_webhooks(self) -> None:
        """Remove the webhook configurations made (first, at stop: a webhook whose server has
        gone refuses every request it covers); safe twice."""
        if self._webhooks and self.plane.apiserver is not None:
            self.plane.kubectl(
                "delete", "--ignore-not-found", "--wait=false", *self._webhooks, check=False
            )
        self._webhooks = []

    def _apply(self, objects: list[dict[str, Any]]) -> None:
        document = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        self._kubectl_apply("-", document)

    def _apply_file(self, path: Path) -> None:
        self._kubectl_apply(str(path), None)

    def _kubectl_apply(self, source: str, document: str | None) -> None:
        done = self.plane.kubectl(
            "apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}",
            "-f", source, input=document, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise self.error(f"kubectl apply failed: {done.stderr.strip()[-2000:]}")

    def _wait_established(self, names: list[str], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        waiting = list(names)
        while waiting:
            got = self.plane.kubectl(
                "get", "crd", *waiting, "-o", "json", "--ignore-not-found", check=False
            )
            found = json.loads(got.stdout or "{}") if got.returncode == 0 else {}
            items = found.get("items", []) if found.get("kind") == "List" else [found]
            ready = {
                c["metadata"]["name"]
                for c in items
                if any(
                    cond["type"] == "Established" and cond["status"] == "True"
                    for cond in (c.get("status") or {}).get("conditions") or []
                )
            }
            waiting = [n for n in waiting if n not in ready]
            if waiting and time.monotonic() > deadline:
                raise self.error(f"CRDs not Established after {timeout:.0f}s: {waiting}")
            if waiting:
                time.sleep(0.2)

    def _spawn(
        self, name: str, argv: list[str], health: str, env: Mapping[str, str] | None = None
    ) -> None:
        with self.log(name).open("ab") as log:
            self.procs[name] = spawn(argv, death_signal=signal.SIGTERM, stdout=log, env=env)
        self._health[name] = health

    def _wait_up(self, names: list[str], timeout: float) -> None:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # the scheduler's self-signed serving certificate
        deadline = time.monotonic() + timeout
        for name in names:
            while True:
                proc = self.procs[name]
                if proc.poll() is not None:
                    raise self.error(
                        f"{name} exited with code {proc.returncode} during start-up; log "
                        f"{self.log(name)}:\n{log_tail(self.log(name))}"
                    )
                if self._answers(self._health[name], context):
                    break
                if time.monotonic() > deadline:
                    raise self.error(
                        f"{name} not up after {timeout:.0f}s; log {self.log(name)}:\n"
                        f"{log_tail(self.log(name))}"
                    )
                time.sleep(0.25)

    @staticmethod
    def _answers(url: str, context: ssl.SSLContext) -> bool:
        """`url` answers 200 (http/https), or accepts a connection (`tcp://host:port`)."""
        if url.startswith("tcp://"):
            host, port = url.removeprefix("tcp://").rsplit(":", 1)
            try:
                socket.create_connection((host, int(port)), timeout=2).close()
                return True
            except OSError:
                return False
        try:
            with urllib.request.urlopen(url, context=context, timeout=2) as answer:
                return int(answer.status) == 200
        except OSError:
            return False
