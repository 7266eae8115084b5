"""The dashboard attacked as issue 20 found it could be, each attack now failing safe, on the real
apiserver: no token (another local user), a path walking into the apiserver, streams enough to
exhaust it, a foreign Host or Origin whatever the bind, YAML parsed before the read-only check,
and, with `--auth kubernetes`, two viewers of different RBAC each seeing and doing exactly what
`kubectl auth can-i` allows them. What held before (CSP, the action header, SafeLoader) stays in
test_server.py and test_browser.py.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.dashboard.server import STREAMS_PER_VIEWER
from tests.dashboard.dashboard_harness import (
    EDIT_RULES,
    VIEW_RULES,
    auth,
    call,
    dashboard,
    grant,
    signed,
    sse_events,
    viewer_dashboard,
)
from tests.harness.operator_run import (
    Api,
    tfjob,
)
from tests.harness.waiting import wait

pytestmark = pytest.mark.controlplane

TRAVERSALS = [
    "..%2F..%2F..%2F..%2Fapi%2Fv1%2Fnamespaces%2Fkube-system%2Fsecrets%3Fx%3D/anything",
    "%2E%2E/anything",
    "%2e%2e%2F%2e%2e/x",
    "..%252F..%252Fapi/x",
    "default/..%2F..%2F..%2Fapi%2Fv1%2Fsecrets",
    "default/a%2Fb",
    "Default/UPPER",
    "default/%00",
]


def _job(admin: Api, ns: str, name: str) -> dict[str, Any]:
    return admin.create_tfjob(ns, tfjob(name, {"Worker": {"replicas": 1}}))


def _secret(control_plane: ControlPlane) -> str:
    value = f"s3cret-{uuid.uuid4().hex}"
    control_plane.kubectl(
        "-n",
        "kube-system",
        "create",
        "secret",
        "generic",
        f"taas-t-{uuid.uuid4().hex[:6]}",
        f"--from-literal=key={value}",
        check=False,
    )
    return value


def test_nothing_without_the_token(control_plane: ControlPlane, admin: Api, namespace: str) -> None:
    _job(admin, namespace, "kept")
    with dashboard(control_plane.kubeconfig, [namespace]) as url:
        for path in ("", "api/info", "api/jobs", f"api/jobs/{namespace}/kept", "static/app.js"):
            answer = call(url + path, token=False)
            assert answer.status == 401, (path, answer.status)
            assert b"kept" not in answer.raw
        refused = call(f"{url}api/jobs/{namespace}/kept", "DELETE", token=False)
        assert refused.status == 401
        wrong = call(url + "api/jobs", headers={"Authorization": "Bearer guess"}, token=False)
        assert wrong.status == 401
        assert "open the URL that `taas dashboard` printed" in wrong.json["error"]
        # Another Unix user of this machine, as the attack was made (uid nobody, a plain curl).
        if os.geteuid() == 0 and shutil.which("setpriv"):
            other = subprocess.run(
                [
                    "setpriv",
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    sys.executable,
                    "-c",
                    "import sys,urllib.request as u\n"
                    "r=u.Request(sys.argv[1],method='DELETE',headers={'X-TaaS-Dashboard':'1'})\n"
                    "try: u.urlopen(r)\nexcept Exception as e: print(getattr(e,'code',e))",
                    f"{url}api/jobs/{namespace}/kept",
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert other.stdout.strip() == "401", other.stdout + other.stderr
        assert admin.tfjob(namespace, "kept") is not None  # nothing was deleted
        # The printed URL lets a browser in: a cookie, then the page without the token.
        entry = urlsplit(url)
        connection = http.client.HTTPConnection(entry.hostname, entry.port, timeout=10)
        connection.request("GET", urlsplit(signed(url)).path + "?" + urlsplit(signed(url)).query)
        redirect = connection.getresponse()
        redirect.read()
        assert redirect.status == 303 and redirect.getheader("Location") == "/"
        cookie = redirect.getheader("Set-Cookie") or ""
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        connection.request("GET", "/api/jobs", headers={"Cookie": cookie.split(";")[0]})
        assert connection.getresponse().status == 200
        connection.close()


def test_names_never_reach_another_apiserver_path(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    secret = _secret(control_plane)
    with dashboard(control_plane.kubeconfig, [namespace]) as url:
        for bad in TRAVERSALS:
            for suffix in ("", "/stream", "/logs"):
                answer = call(f"{url}api/jobs/{bad}{suffix}")
                assert answer.status in (400, 404), (bad, suffix, answer.status)
                assert secret.encode() not in answer.raw
                assert b"kube-system" not in answer.raw or answer.status == 400
            refused = call(f"{url}api/jobs/{bad}", "DELETE")
            assert refused.status in (400, 404), (bad, refused.status)
        everywhere = call(f"{url}api/namespaces/%2E%2E/permissions")
        assert everywhere.status == 400
        assert "is not a Kubernetes name" in everywhere.json["error"]
        bad_ns = call(f"{url}api/jobs?namespace=..%2Fkube-system", "POST", "kind: TFJob")
        assert bad_ns.status == 400 and "namespace" in bad_ns.json["error"]


def test_yaml_is_not_read_before_the_read_only_check(control_plane: ControlPlane) -> None:
    bomb = "a: &a [" + ",".join(["x"] * 9) + "]\n"
    for level in "bcdefghij":
        previous = chr(ord(level) - 1)
        bomb += f"{level}: &{level} [" + ",".join([f"*{previous}"] * 9) + "]\n"
    with dashboard(control_plane.kubeconfig, ["default"], read_only=True) as url:
        started = time.monotonic()
        refused = call(url + "api/jobs?namespace=default", "POST", bomb)
        assert refused.status == 403 and "read-only" in refused.json["error"]
        assert time.monotonic() - started < 5
        assert call(url + "api/info").status == 200  # still answering


def test_streams_are_capped_and_requests_still_answer(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    with dashboard(control_plane.kubeconfig, [namespace]) as url:
        parts = urlsplit(url)
        held: list[http.client.HTTPResponse] = []
        connections: list[http.client.HTTPConnection] = []
        statuses: list[int] = []
        try:
            for index in range(STREAMS_PER_VIEWER + 4):
                connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
                connection.request(
                    "GET", f"/api/jobs/{namespace}/nope-{index}/stream", headers=auth(url)
                )
                response = connection.getresponse()
                statuses.append(response.status)
                connections.append(connection)
                if response.status == 200:
                    held.append(response)
                else:
                    body = json.loads(response.read())
                    assert "live views open" in body["error"]
            assert statuses.count(200) == STREAMS_PER_VIEWER
            assert statuses[STREAMS_PER_VIEWER:] == [429] * 4
            # Ordinary requests and permission checks still get an apiserver connection.
            perms = call(f"{url}api/namespaces/{namespace}/permissions")
            assert perms.status == 200 and perms.json["delete"]["allowed"] is True
            assert call(url + "api/jobs").status == 200
        finally:
            for connection in connections:
                connection.close()
        # Closed streams free their slots (the server sees each client go).
        wait(
            lambda: call(f"{url}api/jobs/{namespace}/again").status == 404,
            "answers after the streams closed",
        )
        assert sse_events(f"{url}api/jobs/{namespace}/again/stream", 1)


def test_host_and_origin_checked_on_any_bind(control_plane: ControlPlane) -> None:
    with viewer_dashboard(control_plane.kubeconfig, ["default"], host="0.0.0.0") as url:
        rebound = call(url + "api/jobs", headers={"Host": "rebind.evil.example"})
        assert rebound.status == 421
        cross = call(url + "api/jobs/stream", headers={"Origin": "http://evil.example"})
        assert cross.status == 403
        site = call(url + "api/info", headers={"Sec-Fetch-Site": "cross-site"})
        assert site.status == 403
        assert call(url, headers={"Host": "localhost:1"}).status == 200  # the sign-in page


def _service_account(
    plane: ControlPlane, ns: str, rules: list[dict[str, Any]] | None
) -> tuple[str, str]:
    """A ServiceAccount granted `rules` in `ns` (None: nothing): its user name and a token."""
    name = f"sa-{uuid.uuid4().hex[:6]}"
    plane.kubectl("-n", ns, "create", "serviceaccount", name)
    if rules is not None:
        docs = [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": name, "namespace": ns},
                "rules": rules,
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": name, "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
            },
        ]
        plane.kubectl(
            "apply",
            "-f",
            "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}),
        )
    token = plane.kubectl("-n", ns, "create", "token", name).stdout.strip()
    return f"system:serviceaccount:{ns}:{name}", token


def _can_i(plane: ControlPlane, user: str, verb: str, ns: str) -> bool:
    answer = plane.kubectl(
        "auth", "can-i", verb, "tfjobs.kubeflow.org", "-n", ns, f"--as={user}", check=False
    )
    return answer.stdout.strip() == "yes"


def _as(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_each_viewer_acts_with_their_own_rights(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    _job(admin, namespace, "shared")
    _job(admin, namespace, "doomed")
    editor, editor_token = _service_account(control_plane, namespace, EDIT_RULES)
    viewer, viewer_token = _service_account(control_plane, namespace, VIEW_RULES)
    stranger, stranger_token = _service_account(control_plane, namespace, None)
    # Where the cluster is comes from a kubeconfig whose user may do nothing at all.
    nobody = grant(control_plane, namespace, f"nobody-{uuid.uuid4().hex[:6]}", [])
    with viewer_dashboard(nobody, [namespace]) as url:
        signed_out = call(url + "api/jobs")
        assert signed_out.status == 401
        assert signed_out.headers["X-TaaS-Sign-In"] == "kubernetes"
        assert call(url).status == 200  # the page with its sign-in form
        assert call(url + "api/jobs", headers=_as("not-a-token")).status == 401
        for user, token in ((editor, editor_token), (viewer, viewer_token)):
            names = wait(
                lambda token=token: (
                    {j["name"] for j in call(url + "api/jobs", headers=_as(token)).json["jobs"]}
                    or None
                ),
                "the viewer's jobs list",
            )
            assert names == {"shared", "doomed"}
            perms = call(f"{url}api/namespaces/{namespace}/permissions", headers=_as(token)).json
            assert perms["suspend"]["allowed"] == _can_i(control_plane, user, "patch", namespace)
            assert perms["delete"]["allowed"] == _can_i(control_plane, user, "delete", namespace)
            assert perms["create"]["allowed"] == _can_i(control_plane, user, "create", namespace)
        assert _can_i(control_plane, editor, "delete", namespace)
        assert not _can_i(control_plane, viewer, "delete", namespace)
        refused = call(f"{url}api/jobs/{namespace}/doomed", "DELETE", headers=_as(viewer_token))
        assert refused.status == 403 and "forbidden" in refused.json["error"]
        assert admin.tfjob(namespace, "doomed") is not None
        done = call(f"{url}api/jobs/{namespace}/doomed", "DELETE", headers=_as(editor_token))
        assert done.status == 200
        # A viewer with no rights sees nothing of the namespace.
        notes = wait(
            lambda: call(url + "api/jobs", headers=_as(stranger_token)).json["status"]["notes"],
            "the stranger's refusal note",
        )
        assert f"Namespace {namespace}: you may not list TFJobs there" in notes[0]
        assert not _can_i(control_plane, stranger, "list", namespace)
        page = call(f"{url}api/jobs/{namespace}/shared", headers=_as(stranger_token))
        assert page.status == 503 and "You may not read this TFJob" in page.json["error"]
        # Signing in on the page: the token goes to the server once, the cookie holds a session.
        parts = urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
        connection.request(
            "POST",
            "/api/session",
            json.dumps({"token": viewer_token}),
            {"X-TaaS-Dashboard": "1", "Content-Type": "application/json"},
        )
        signed_in = connection.getresponse()
        assert json.loads(signed_in.read()) == {"user": viewer}
        cookie = (signed_in.getheader("Set-Cookie") or "").split(";")[0]
        assert cookie.startswith(f"taas-dashboard-{parts.port}=") and viewer_token not in cookie
        connection.request("GET", "/api/info", headers={"Cookie": cookie})
        info = json.loads(connection.getresponse().read())
        assert info["user"] == viewer and info["auth"] == "kubernetes"
        connection.close()
    with viewer_dashboard(nobody, [namespace], read_only=True) as url:
        wait(lambda: call(url + "api/jobs", headers=_as(editor_token)).json["jobs"], "list")
        refused = call(f"{url}api/jobs/{namespace}/shared", "DELETE", headers=_as(editor_token))
        assert refused.status == 403 and "read-only" in refused.json["error"]


def test_what_held_stays_held(control_plane: ControlPlane) -> None:
    """/static cannot walk out of its folder; a submission over 1 MiB is 413 unread."""
    with dashboard(control_plane.kubeconfig, ["default"]) as url:
        for walk in ("static/..%2F__init__.py", "static/%2e%2e/access.py", "static/../server.py"):
            answer = call(url + walk)
            assert answer.status in (403, 404), (walk, answer.status)
            assert b"import" not in answer.raw
        big = call(url + "api/jobs?namespace=default", "POST", "x" * (2 << 20))
        assert big.status == 413
