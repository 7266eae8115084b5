"""The dashboard's limits are per person, as issue 29 found they were not, each attack now failing
safe on the real apiserver:

- `--auth kubernetes`: tokens of one ServiceAccount with no rights cannot fill the viewer slots
  or the live views (viewers and their stream caps are keyed by the identity the apiserver
  returns, one user's new token replacing their earlier one); one token cannot make sessions
  without end; an empty token is refused here, never sent as an anonymous request; failed
  sign-ins are throttled per token fingerprint and by a ceiling over all clients, never per
  address, and a refused token is not asked about again at once.
- a job page aborted in its first moments releases its watch (they leaked until every page
  answered 429);
- token mode: the cookie holds a session id, never the token, named after the port; an Origin on
  another port is refused; a CR/LF in a path is a 400, no traceback;
- log views of one pod share one `pods/log?follow` request (the test plays the kubelet).
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import struct
import sys
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.api.constants import LABEL_JOB_NAME
from taas_operator.dashboard.access import (
    MAX_VIEWERS,
    RENEWALS_PER_VIEWER,
    SESSIONS_PER_VIEWER,
)
from taas_operator.dashboard.cluster.source import MAX_JOB_PAGES
from taas_operator.dashboard.server import STREAMS_PER_VIEWER
from taas_operator.processes import spawn, stop
from tests.dashboard.dashboard_harness import (
    EDIT_RULES,
    TOKENS,
    auth,
    call,
    dashboard,
    signed,
    viewer_dashboard,
)
from tests.harness.kubelet_player import KubeletPlayer
from tests.harness.operator_run import (
    PODS,
    Api,
    tfjob,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]


def _account(admin: Api, ns: str) -> str:
    """A ServiceAccount with no rights at all."""
    name = f"sa-{uuid.uuid4().hex[:6]}"
    admin.create(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": name}})
    return name


def _token(admin: Api, ns: str, account: str) -> str:
    """A new token of `account` (as `kubectl create token` makes one)."""
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    made = admin.create(f"/api/v1/namespaces/{ns}/serviceaccounts/{account}/token", request)
    return str(made["status"]["token"])


def _as(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _sign_in(url: str, token: str) -> tuple[int, str, dict[str, Any]]:
    """POST /api/session as the page does: (status, the cookie 'name=value', the answer)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    body = json.dumps({"token": token})
    connection.request(
        "POST", "/api/session", body, {"X-TaaS-Dashboard": "1", "Content-Type": "application/json"}
    )
    answer = connection.getresponse()
    data = json.loads(answer.read() or b"{}")
    cookie = (answer.getheader("Set-Cookie") or "").split(";")[0]
    connection.close()
    return answer.status, cookie, data


def _open_stream(url: str, path: str, headers: dict[str, str]) -> tuple[Any, Any]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    connection.request("GET", path, headers=headers)
    return connection, connection.getresponse()


def test_one_person_holds_one_viewer_slot_and_one_stream_cap(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    account = _account(admin, namespace)
    tokens = [_token(admin, namespace, account) for _ in range(MAX_VIEWERS + 2)]
    other = _token(admin, namespace, _account(admin, namespace))
    with viewer_dashboard(control_plane.kubeconfig, [namespace]) as url:
        # 66 tokens of one ServiceAccount are one person: none of them takes a second slot
        # (each new one replaces the one before, a bounded number of times a minute), and
        # someone else still gets in.
        answers = [call(url + "api/info", headers=_as(token)) for token in tokens]
        renewed = 1 + RENEWALS_PER_VIEWER
        assert [a.status for a in answers] == [200] * renewed + [429] * (len(tokens) - renewed)
        assert "new tokens within" in answers[-1].json["error"]
        assert call(url + "api/info", headers=_as(other)).status == 200
        # Live views are capped per person, whichever of their tokens opened them.
        person = _account(admin, namespace)
        first, second = _token(admin, namespace, person), _token(admin, namespace, person)
        held = []
        try:
            for token in (first, second):
                for _ in range(STREAMS_PER_VIEWER // 2):
                    held.append(_open_stream(url, "/api/jobs/stream", _as(token)))
                    assert held[-1][1].status == 200
            connection, refused = _open_stream(url, "/api/jobs/stream", _as(second))
            assert refused.status == 429
            assert "live views open" in json.loads(refused.read())["error"]
            connection.close()
            # Another ServiceAccount of the namespace shares the namespace's group (16 views,
            # all held); someone of another group still gets theirs.
            connection, same_group = _open_stream(url, "/api/jobs/stream", _as(other))
            assert same_group.status == 429
            group = f"system:serviceaccounts:{namespace} has {STREAMS_PER_VIEWER} live views"
            assert group in json.loads(same_group.read())["error"]
            connection.close()
            elsewhere = f"other-{uuid.uuid4().hex[:6]}"
            admin.create("/api/v1/namespaces", {"metadata": {"name": elsewhere}})
            stranger = _token(admin, elsewhere, _account(admin, elsewhere))
            connection, theirs = _open_stream(url, "/api/jobs/stream", _as(stranger))
            assert theirs.status == 200
            connection.close()
        finally:
            for connection, _ in held:
                connection.close()


def _bind(admin: Api, ns: str, account: str, rules: list[dict[str, Any]]) -> None:
    """A Role with `rules` in `ns` bound to the ServiceAccount `account` of `ns`."""
    name = f"role-{account}"
    admin.create(
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
        {"metadata": {"name": name}, "rules": rules},
    )
    admin.create(
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ns}],
        },
    )


def test_a_namespace_scoped_viewer_sees_and_submits_in_their_namespace(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    """Issue 44: with `edit` in one namespace only and the chart's defaults (no
    dashboard.namespaces), the page showed the dashboard's own namespace and hid Submit."""
    other = f"other-{uuid.uuid4().hex[:6]}"
    admin.create("/api/v1/namespaces", {"metadata": {"name": other}})
    admin.create_tfjob(namespace, tfjob("mine", {"Worker": {"replicas": 1}}))
    admin.create_tfjob(other, tfjob("theirs", {"Worker": {"replicas": 1}}))
    account = _account(admin, namespace)
    _bind(admin, namespace, account, EDIT_RULES)
    viewer = _as(_token(admin, namespace, account))
    with viewer_dashboard(control_plane.kubeconfig) as url:  # no namespaces named
        jobs = wait(
            lambda: (lambda a: a if a.get("jobs") else None)(
                call(url + "api/jobs", headers=viewer).json or {}
            ),
            "the viewer's job in the list",
        )
        assert [(j["namespace"], j["name"]) for j in jobs["jobs"]] == [(namespace, "mine")]
        (note,) = jobs["status"]["notes"]
        assert f"you may list TFJobs in 1 namespace(s): showing {namespace}" in note
        info = call(url + "api/info", headers=viewer).json
        assert info["defaultNamespace"] == namespace
        permissions = call(f"{url}api/namespaces/{namespace}/permissions", headers=viewer).json
        assert permissions["create"]["allowed"] is True  # the page shows Submit
        assert call(f"{url}api/jobs/{other}/theirs", headers=viewer).status != 200


def test_a_new_token_replaces_the_earlier_and_sessions_are_bounded(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    account = _account(admin, namespace)
    earlier, later = _token(admin, namespace, account), _token(admin, namespace, account)
    user = f"system:serviceaccount:{namespace}:{account}"
    with viewer_dashboard(control_plane.kubeconfig, [namespace]) as url:
        port = urlsplit(url).port
        cookies = []
        for _ in range(SESSIONS_PER_VIEWER + 6):
            status, cookie, data = _sign_in(url, earlier)
            assert status == 200 and data == {"user": user}
            assert cookie.startswith(f"taas-dashboard-{port}=") and earlier not in cookie
            cookies.append(cookie)
        alive = [call(url + "api/info", headers={"Cookie": c}).status for c in cookies]
        assert alive == [401] * 6 + [200] * SESSIONS_PER_VIEWER  # the oldest ended first
        # A live view opened with the earlier token ends once the later one signs in.
        connection, stream = _open_stream(url, "/api/jobs/stream", _as(earlier))
        assert stream.status == 200
        status, replacing, _ = _sign_in(url, later)
        assert status == 200
        assert call(url + "api/info", headers={"Cookie": cookies[-1]}).status == 401
        assert call(url + "api/info", headers={"Cookie": replacing}).status == 200
        started = time.monotonic()
        while stream.read1(4096):
            assert time.monotonic() - started < 40, "the replaced token's stream goes on"
        connection.close()


def test_empty_and_refused_tokens_never_flood_the_apiserver(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    good = _token(admin, namespace, _account(admin, namespace))
    asked: list[str] = []
    with viewer_dashboard(control_plane.kubeconfig, [namespace], asked=asked) as url:
        for empty in ("", "   "):
            status, cookie, data = _sign_in(url, empty)
            assert status == 401 and "the token is empty" in data["error"] and not cookie
        assert asked == []  # never sent, so never an anonymous request
        wrong = "not-a-token-" + uuid.uuid4().hex
        assert _sign_in(url, wrong)[0] == 401
        assert call(url + "api/jobs", headers=_as(wrong)).status == 401
        assert asked == [wrong]  # refused once: remembered, not asked again
        statuses = [_sign_in(url, f"guess-{i}")[0] for i in range(10)]
        assert statuses == [401] * 10
        # the same address (as everyone behind an Ingress): a good token still signs in
        status, _, data = _sign_in(url, good)
        assert status == 200, data
        assert asked == [wrong, *(f"guess-{i}" for i in range(10)), good]


def _abort(url: str, path: str) -> None:
    """Send a GET with the dashboard's token and reset the connection at once."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as raw:
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
            f"Authorization: {auth(url)['Authorization']}\r\n\r\n"
        )
        raw.sendall(request.encode())
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_aborted_job_pages_release_their_watches(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    with dashboard(control_plane.kubeconfig, [namespace]) as url:
        for index in range(MAX_JOB_PAGES + 16):
            suffix = "/stream" if index % 2 else ""
            _abort(url, f"/api/jobs/{namespace}/gone-{index}{suffix}")
        time.sleep(1.0)
        for index in range(4):
            answer = call(f"{url}api/jobs/{namespace}/fresh-{index}")
            assert answer.status == 404, (answer.status, answer.json)


def test_token_mode_cookie_is_a_session_per_port_and_origin_ports_differ(
    control_plane: ControlPlane,
) -> None:
    with (
        dashboard(control_plane.kubeconfig, ["default"]) as one,
        dashboard(control_plane.kubeconfig, ["default"]) as two,
    ):
        cookies = {}
        for url in (one, two):
            entry = urlsplit(signed(url))
            connection = http.client.HTTPConnection(entry.hostname, entry.port, timeout=10)
            connection.request("GET", f"/?{entry.query}")
            answer = connection.getresponse()
            answer.read()
            assert answer.status == 303
            name, _, value = (answer.getheader("Set-Cookie") or "").split(";")[0].partition("=")
            assert name == f"taas-dashboard-{entry.port}"
            assert value and TOKENS[url] not in value  # a session id, never the token
            cookies[url] = f"{name}={value}"
            connection.close()
        assert call(one + "api/info", headers={"Cookie": cookies[one]}, token=False).status == 200
        # The session of one port opens nothing on the other, nor does the token as a cookie.
        port_two = urlsplit(two).port
        assert call(two + "api/info", headers={"Cookie": cookies[one]}, token=False).status == 401
        stolen = f"taas-dashboard-{port_two}={TOKENS[two]}"
        assert call(two + "api/info", headers={"Cookie": stolen}, token=False).status == 401
        # A page on another port of this machine is another origin.
        port_one = urlsplit(one).port
        for origin, status in (
            (f"http://127.0.0.1:{port_one}", 200),
            (f"http://127.0.0.1:{port_two}", 403),
            ("http://127.0.0.1", 403),
            (f"http://localhost:{port_one}", 200),
        ):
            answer = call(one + "api/jobs", headers={"Origin": origin})
            assert answer.status == status, (origin, answer.status)


def test_a_cr_lf_path_is_a_400_without_traceback(
    control_plane: ControlPlane, tmp_path: Any
) -> None:
    log = tmp_path / "dashboard.err"
    with log.open("wb") as err:
        proc = spawn(
            [sys.executable, "-m", "taas_operator.cli", "dashboard", "--kubeconfig",
             control_plane.kubeconfig, "--port", "0", "-n", "default"],
            stderr=err,
        )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        found = re.search(r"(http://\S+/)\?token=(\S+)", line)
        assert found, line
        base, token = found.groups()
        parts = urlsplit(base)
        for path in (f"/a%0D%0Ab?token={token}", "/api/jobs/x%0d%0a/y", f"/%0A?token={token}"):
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
            connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
            answer = connection.getresponse()
            assert answer.status == 400, (path, answer.status)
            assert "control character" in json.loads(answer.read())["error"]
            connection.close()
        assert call(base + "api/info", headers=_as(token), token=False).status == 200
    finally:
        stop(proc, grace=5)
    said = log.read_text(errors="replace")
    assert "Traceback" not in said and "Unhandled" not in said, said


def _one_worker_job(admin: Api, namespace: str, name: str) -> str:
    """A one-worker TFJob and its worker's pod (no operator runs: the test makes it); its name."""
    admin.create_tfjob(namespace, tfjob(name, {"Worker": {"replicas": 1}}))
    pod = f"{name}-worker-0"
    manifest = {
        "metadata": {"name": pod, "labels": {LABEL_JOB_NAME: name}},
        "spec": {"containers": [{"name": "tensorflow", "image": "example.com/t:1"}]},
    }
    admin.create(PODS.format(ns=namespace), manifest)
    return pod


def test_log_views_of_a_pod_share_one_follow(
    control_plane: ControlPlane, admin: Api, namespace: str, tmp_path: Any
) -> None:
    pod = _one_worker_job(admin, namespace, "talk")
    kubelet = KubeletPlayer(admin, tmp_path)
    try:
        kubelet.run(namespace, pod, lines=["step 1"])
        with dashboard(control_plane.kubeconfig, [namespace]) as url:
            views = [
                _open_stream(url, f"/api/jobs/{namespace}/talk/logs", auth(url))
                for _ in range(STREAMS_PER_VIEWER)
            ]
            try:
                for _, view in views:
                    assert view.status == 200
                    wait(lambda view=view: b"step 1" in view.read1(65536), "the first line")
                kubelet.say(namespace, pod, "step 2")
                for _, view in views:
                    wait(lambda view=view: b"step 2" in view.read1(65536), "the next line")
                assert kubelet.follows[(namespace, pod)] == 1
            finally:
                for connection, _ in views:
                    connection.close()
    finally:
        kubelet.close()


def test_a_log_view_ends_with_the_job_and_says_why(
    control_plane: ControlPlane, admin: Api, namespace: str, tmp_path: Any
) -> None:
    """Issue 44: the log pane looked for the pods cleanPodPolicy deleted for ever; now it stops
    once the job has ended and its streams have closed, and says why no more lines come."""
    pod = _one_worker_job(admin, namespace, "over")
    kubelet = KubeletPlayer(admin, tmp_path)
    try:
        kubelet.run(namespace, pod, lines=["step 1"])
        with dashboard(control_plane.kubeconfig, [namespace]) as url:
            connection, view = _open_stream(url, f"/api/jobs/{namespace}/over/logs", auth(url))
            try:
                read = bytearray()
                wait(lambda: (read.extend(view.read1(65536)), b"step 1" in read)[1], "a line")
                kubelet.end(namespace, pod, "Succeeded")
                condition = {"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded"}
                admin.merge_patch(
                    f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/over/status",
                    {"status": {"conditions": [condition]}},
                )
                admin.delete(f"{PODS.format(ns=namespace)}/{pod}?gracePeriodSeconds=0")
                wait(
                    lambda: (read.extend(view.read1(65536)), b"the TFJob has ended" in read)[1],
                    "the view to say the job ended",
                    timeout=60,
                )
                assert b"cleanPodPolicy" in read
            finally:
                connection.close()
    finally:
        kubelet.close()
