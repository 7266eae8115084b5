"""The test plays the kubelet for the client tests: pod phases (pods/status, as tests/operator
does everywhere) and now also container logs, which the real kube-apiserver proxies from a
node's kubelet endpoint.

    kubelet = KubeletPlayer(api, directory)     # an HTTPS server on 127.0.0.1 + a Node object
    kubelet.run(ns, pod, lines=[...])           # bind the pod to the node, Running, log lines
    kubelet.say(ns, pod, "more")                # another line (followers see it)
    kubelet.end(ns, pod, "Succeeded", exit_code=0)   # the container ends: its stream closes
    kubelet.follows[(ns, pod)]                  # how many followed log requests reached it
    kubelet.close()

Real: the apiserver (pods/binding, pods/status, and `GET pods/log` proxied to this server over
TLS, as it proxies to any kubelet at the node's InternalIP and kubeletEndpoint port). Played:
what a kubelet would answer at `/containerLogs/<ns>/<pod>/<container>[?follow=true]`.
"""

from __future__ import annotations

import ssl
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from taas_controlplane.controlplane.certificates import CertificateAuthority
from tests.harness.operator_run import PODS, Api


class KubeletPlayer:
    """A node named `fake-<id>` whose kubelet endpoint is this process."""

    def __init__(self, api: Api, directory: Path) -> None:
        self.api = api
        self.node = f"fake-{uuid.uuid4().hex[:6]}"
        self.lines: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.ended: set[tuple[str, str]] = set()
        self.follows: Counter[tuple[str, str]] = Counter()
        self.changed = threading.Condition()
        authority = CertificateAuthority.create(directory)
        pair = authority.issue("kubelet", self.node, hosts=["127.0.0.1"])
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pair.cert, pair.key)
        handler = type("Handler", (_Handler,), {"player": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        port = self.server.server_address[1]
        api.create("/api/v1/nodes", {"metadata": {"name": self.node}})
        status = {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        }
        api.merge_patch(f"/api/v1/nodes/{self.node}/status", {"status": status})

    def run(self, ns: str, pod: str, lines: Sequence[str] = (), pod_ip: str = "127.0.0.1") -> None:
        """Schedule the pod here and start its container (Running), with its first lines."""
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.node},
        }
        self.api.create(f"{PODS.format(ns=ns)}/{pod}/binding", binding)
        with self.changed:
            self.lines[(ns, pod)].extend(lines)
            self.ended.discard((ns, pod))
            self.changed.notify_all()
        self.api.set_pod_phase(ns, pod, "Running", pod_ip=pod_ip)

    def say(self, ns: str, pod: str, line: str) -> None:
        """One more log line."""
        with self.changed:
            self.lines[(ns, pod)].append(line)
            self.changed.notify_all()

    def end(self, ns: str, pod: str, phase: str, exit_code: int = 0) -> None:
        """The container exits: followers' streams end, then the phase is written."""
        with self.changed:
            self.ended.add((ns, pod))
            self.changed.notify_all()
        self.api.set_pod_phase(ns, pod, phase, exit_code=exit_code, pod_ip="127.0.0.1")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    player: KubeletPlayer

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        parts = path.strip("/").split("/")
        if len(parts) != 4 or parts[0] != "containerLogs":
            self.send_error(404)
            return
        key = (parts[1], parts[2])
        follow = "follow=true" in query
        if follow:
            with self.player.changed:
                self.player.follows[key] += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        sent = 0
        player = self.player
        while True:
            with player.changed:
                lines = list(player.lines.get(key, []))
                ended = key in player.ended
            for line in lines[sent:]:
                self.wfile.write(line.encode() + b"\n")
            self.wfile.flush()
            sent = len(lines)
            if not follow or ended:
                return
            with player.changed:
                player.changed.wait(0.2)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def wait_started(kubelet: KubeletPlayer, ns: str, pod: str, timeout: float = 20) -> None:
    """Wait until the apiserver shows the pod scheduled here (nodeName set)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = kubelet.api.find(f"{PODS.format(ns=ns)}/{pod}")
        if found and found["spec"].get("nodeName") == kubelet.node:
            return
        time.sleep(0.1)
    raise AssertionError(f"pod {ns}/{pod} never bound to {kubelet.node}")
