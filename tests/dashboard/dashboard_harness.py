"""Helpers for the dashboard tests: the server in-process, plain HTTP calls, RBAC users, a
headless Chromium.

Real: the dashboard's server (aiohttp, in a thread of the test process, or `taas dashboard` /
`taas run --dashboard` as a process), the kube-apiserver, RBAC, Chromium (Debian's package,
driven by Playwright's protocol driver; no browser is downloaded).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from taas_operator.dashboard.access import TokenGate, ViewerGate
from taas_operator.dashboard.cluster import ClusterSource
from taas_operator.dashboard.cluster.source import connect
from taas_operator.dashboard.guard import ACTION_HEADER
from taas_operator.dashboard.main import viewer_sources
from taas_operator.dashboard.serve import Background
from taas_operator.dashboard.server import ServerSettings

CHROMIUM = "/usr/bin/chromium"
#: Without the background-networking flags Chromium tries to reach Google's services, which the
#: closed network refuses (slow start, noise); a fresh profile per launch (Playwright's default).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def launch_chromium(playwright: Any) -> Any:
    """Headless Debian Chromium with a fresh profile."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, chromium_sandbox=False
    )


#: Each running test dashboard's URL -> its token: `call` and `sse_events` send it as a script
#: would (Authorization: Bearer), `signed(url)` gives the printed URL a browser opens.
TOKENS: dict[str, str] = {}


@contextmanager
def dashboard(
    kubeconfig: str, namespaces: list[str] | None = None, read_only: bool = False
) -> Iterator[str]:
    """`taas dashboard` in this process (a thread): yields its URL (without the token)."""
    gate = TokenGate(ClusterSource.load(kubeconfig, None, namespaces))
    server = Background.start(gate, ServerSettings(port=0, read_only=read_only))
    TOKENS[server.url] = gate.token
    try:
        yield server.url
    finally:
        TOKENS.pop(server.url, None)
        server.stop()


@contextmanager
def viewer_dashboard(
    kubeconfig: str,
    namespaces: list[str] | None = None,
    read_only: bool = False,
    host: str = "127.0.0.1",
    asked: list[str] | None = None,
) -> Iterator[str]:
    """`taas dashboard --auth kubernetes` in this process: each request acts with the bearer
    token it carries (or its sign-in session); `kubeconfig` only says where the cluster is.
    `asked` gets each token the apiserver is asked about (SelfSubjectReview), in order."""
    sources = viewer_sources(connect(kubeconfig, None), list(namespaces or []))

    async def viewer_source(token: str) -> tuple[int, str, str, Any]:
        if asked is not None:
            asked.append(token)
        return await sources(token)

    settings = ServerSettings(host=host, port=0, read_only=read_only)
    server = Background.start(ViewerGate(viewer_source), settings)
    try:
        yield server.url
    finally:
        server.stop()


def signed(url: str) -> str:
    """The URL `taas dashboard` prints for the dashboard at `url` (with its token)."""
    return f"{url}?token={TOKENS[url]}"


def _token_for(url: str) -> str:
    return next((token for base, token in TOKENS.items() if url.startswith(base)), "")


def auth(url: str) -> dict[str, str]:
    """The header a script sends to the test dashboard serving `url`."""
    return {"Authorization": f"Bearer {_token_for(url)}"}


class Answer:
    """An HTTP answer: status and decoded JSON."""

    def __init__(self, status: int, body: bytes, headers: Any) -> None:
        self.status, self.raw, self.headers = status, body, headers
        try:
            self.json: Any = json.loads(body) if body else None
        except ValueError:
            self.json = None


def call(
    url: str,
    method: str = "GET",
    body: str | bytes | None = None,
    headers: dict[str, str] | None = None,
    action: bool = True,
    token: bool = True,
) -> Answer:
    """One request; actions carry the page's header unless `action=False`, and every request
    the dashboard's token unless `token=False`."""
    all_headers = dict(headers or {})
    if token and _token_for(url):
        all_headers.setdefault("Authorization", f"Bearer {_token_for(url)}")
    if action and method != "GET":
        all_headers[ACTION_HEADER] = "1"
    data = body.encode() if isinstance(body, str) else body
    request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return Answer(response.status, response.read(), response.headers)
    except urllib.error.HTTPError as err:
        return Answer(err.code, err.read(), err.headers)


def sse_events(url: str, count: int, timeout: float = 20.0) -> list[tuple[str, Any]]:
    """The first `count` server-sent events of `url` as (event, data)."""
    events: list[tuple[str, Any]] = []
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(url)
    if _token_for(url):
        request.add_header("Authorization", f"Bearer {_token_for(url)}")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        name = ""
        for raw in response:
            assert time.monotonic() < deadline, f"only {events} from {url} in {timeout:.0f}s"
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[6:])))
                if len(events) >= count:
                    break
    return events


VIEW_RULES = [
    {"apiGroups": ["kubeflow.org"], "resources": ["tfjobs"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": [""],
        "resources": ["pods", "pods/log", "events"],
        "verbs": ["get", "list", "watch"],
    },
]
EDIT_RULES = [
    *VIEW_RULES,
    {
        "apiGroups": ["kubeflow.org"],
        "resources": ["tfjobs"],
        "verbs": ["create", "patch", "delete"],
    },
]

#: The Submit form's program makes a ConfigMap too (first, then its ownerReference; deleted
#: again if the TFJob cannot be made): the editor's rights and those.
FORM_RULES = [
    *EDIT_RULES,
    {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "verbs": ["create", "get", "patch", "delete"],
    },
]


def grant(plane: Any, namespace: str, user: str, rules: list[dict[str, Any]]) -> str:
    """A Role with `rules` bound to `user` in `namespace`; the user's kubeconfig."""
    name = f"dash-{user}"
    docs = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": namespace},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    ]
    done = plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs), check=False)
    assert done.returncode == 0, done.stderr
    return str(plane.kubeconfig_for(user))


def artifacts_dir() -> Path:
    """Where screenshots go: $TAAS_ARTIFACTS, else a temporary directory (printed at the end)."""
    folder = Path(
        os.environ.get("TAAS_ARTIFACTS") or Path(tempfile.gettempdir()) / "taas-artifacts"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder
