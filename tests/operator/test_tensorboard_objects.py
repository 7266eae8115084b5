"""The operator's TensorBoard for a TFJob annotated `taas.dev/tensorboard: "true"`, on the real
apiserver (the objects the operator makes for it: test_tensorboard_for_jobs, fast).
`taas tensorboard JOB` says what each kind of job lacks, bounded; its
local proxy forwards to this apiserver with the kubeconfig's identity, only for whoever holds its
per-run token, and refuses whatever could leave its one Service (a path climbing out, another
Host, another site's or port's Origin). That the
TensorBoard serves the job's scalars is tests/e2e's, on a node (no pod runs here).
"""

from __future__ import annotations

import asyncio
import http.client
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.apiserver.blocking import Connection
from taas_operator.tensorboard_command.proxy import ServiceProxy
from tests.harness.operator_run import (
    Api,
    StartOperator,
    new_namespace,
    unique,
)
from tests.harness.waiting import wait
from tests.operator.tensorboard_helpers import IMAGE, board_job, warnings_of

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def ns(admin: Api, start_operator: StartOperator) -> str:
    name = new_namespace(admin, "tb")
    start_operator(name, args=(f"--tensorboard-image={IMAGE}",))
    return name


# -- `taas tensorboard JOB` against this apiserver (no node: no TensorBoard pod ever runs) ------


def _taas_tensorboard(kubeconfig: str, ns: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "taas_operator.cli", "tensorboard", *args, "-n", ns,
         "--kubeconfig", kubeconfig, "--port", "0"],
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip


def test_the_command_says_what_each_job_lacks(
    admin: Api, ns: str, control_plane: ControlPlane
) -> None:
    kubeconfig = control_plane.kubeconfig
    plain, link, unshareable, waiting = (unique(p) for p in ("p", "l", "u", "w"))
    admin.create_tfjob(ns, board_job(plain, None, "/model/run", {"hostPath": {"path": "/srv"}}))
    admin.create_tfjob(ns, board_job(link, "https://tb.example/x", "/model/r", {"emptyDir": {}}))
    admin.create_tfjob(ns, board_job(unshareable, "true", "/model/run", {"emptyDir": {}}))
    admin.create_tfjob(ns, board_job(waiting, "true", "/model/run", {"hostPath": {"path": "/srv"}}))
    wait(lambda: warnings_of(admin, ns, unshareable, "TensorBoardUnavailable"), "the Warning")

    missing = _taas_tensorboard(kubeconfig, ns, "no-such-job")
    assert missing.returncode == 2 and 'TFJob "no-such-job" not found' in missing.stderr

    asks_none = _taas_tensorboard(kubeconfig, ns, plain)
    assert asks_none.returncode == 2
    assert f"kubectl annotate tfjob {plain} -n {ns} taas.dev/tensorboard=true" in asks_none.stderr

    linked = _taas_tensorboard(kubeconfig, ns, link)
    assert linked.returncode == 0 and "https://tb.example/x" in linked.stdout
    for job, line in (
        (link, "TensorBoard: https://tb.example/x"),
        (waiting, f"TensorBoard: taas tensorboard {waiting} -n {ns}"),
    ):
        got = subprocess.run(
            [
                sys.executable,
                "-m",
                "taas_operator.cli",
                "get",
                job,
                "-n",
                ns,
                "--kubeconfig",
                kubeconfig,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert got.stdout.splitlines()[-1] == line  # `taas get JOB` says where it is

    refused = _taas_tensorboard(kubeconfig, ns, unshareable)
    assert refused.returncode == 2 and "emptyDir volume 'model'" in refused.stderr

    started = time.monotonic()
    slow = _taas_tensorboard(kubeconfig, ns, waiting, "--timeout", "4")
    assert slow.returncode == 1, slow
    assert "did not answer within 4s" in slow.stderr
    assert f"kubectl get pods -n {ns} -l taas.dev/tensorboard-for={waiting}" in slow.stderr
    assert time.monotonic() - started < 30
    for done in (missing, asks_none, linked, refused, slow):
        assert "Traceback" not in done.stderr


# -- the local proxy's guard, in front of this apiserver -----------------------------------------


@pytest.fixture
def proxy(control_plane: ControlPlane, ns: str) -> Iterator[ServiceProxy]:
    """`ServiceProxy` to service `absent` (none such) in `ns`, listening in its own loop."""
    loop = asyncio.new_event_loop()
    transport = Connection.load(control_plane.kubeconfig).transport()
    proxy = ServiceProxy(transport, ns, "absent", "http")
    runner, _ = loop.run_until_complete(proxy.listen("127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield proxy
    asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
    asyncio.run_coroutine_threadsafe(transport.close(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def _answer(
    proxy: ServiceProxy, method: str, path: str, token: bool = True, **headers: str
) -> http.client.HTTPResponse:
    """One request to the proxy, with its token as a script sends it unless `token=False`."""
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    body = headers.pop("body", None)
    connection.putrequest(method, path, skip_host=True)
    connection.putheader("Host", headers.pop("Host", f"127.0.0.1:{proxy.port}"))
    if token:
        connection.putheader("Authorization", f"Bearer {proxy.run.token}")
    for key, value in headers.items():
        connection.putheader(key, value)
    connection.putheader("Content-Length", str(len(body or "")))
    connection.endheaders(body.encode() if body else None)
    return connection.getresponse()


def _raw(proxy: ServiceProxy, method: str, path: str, **headers: Any) -> tuple[int, str]:
    answer = _answer(proxy, method, path, **headers)
    return answer.status, answer.read().decode(errors="replace")


def test_the_proxy_reaches_only_its_service_for_only_this_machine(proxy: ServiceProxy) -> None:
    # Forwarded with the kubeconfig's identity: the apiserver's own answer for the Service.
    status, text = _raw(proxy, "GET", "/data/environment")
    assert status == 404 and 'services \\"absent\\" not found' in text, text
    for path in ("/a/../../secrets", "/%2e%2e/%2E%2E/secrets", "/a%2Fb", "/a%5Cb", "/./x"):
        assert _raw(proxy, "GET", path)[0] == 400, path
    assert _raw(proxy, "GET", "/", Host=f"rebind.evil.example:{proxy.port}")[0] == 421
    assert _raw(proxy, "GET", "/", Origin="http://evil.example")[0] == 403
    assert _raw(proxy, "GET", "/", Origin=f"http://127.0.0.1:{proxy.port + 1}")[0] == 403
    assert _raw(proxy, "DELETE", "/x")[0] == 405
    assert _raw(proxy, "POST", "/x", body="x" * (2 << 20))[0] == 413
    assert _raw(proxy, "GET", "/" + "a" * 5000)[0] == 414
    assert _raw(proxy, "GET", "/" + "a" * 9000)[0] == 400  # aiohttp's own bound


def test_the_proxy_needs_its_token(proxy: ServiceProxy) -> None:
    """Issue 29: any local user could send GETs and POSTs through it as the owner."""
    for method, path in (("GET", "/data/environment"), ("POST", "/data/x"), ("GET", "/")):
        status, text = _raw(proxy, method, path, token=False)
        assert status == 401 and "taas tensorboard" in text, (method, path, status, text)
    wrong = {"Authorization": "Bearer guess", "Cookie": f"taas-tensorboard-{proxy.port}=guess"}
    assert _raw(proxy, "GET", "/data/environment", token=False, **wrong)[0] == 401
    # The printed URL: a session cookie (never the token) and the page without the token.
    entry = urlsplit(proxy.entry())
    assert entry.port == proxy.port and entry.query == f"token={proxy.run.token}"
    opened = _answer(proxy, "GET", f"/data/environment?{entry.query}", token=False)
    opened.read()
    assert opened.status == 303 and opened.getheader("Location") == "/data/environment"
    name, _, value = (opened.getheader("Set-Cookie") or "").split(";")[0].partition("=")
    assert name == f"taas-tensorboard-{proxy.port}" and value and proxy.run.token not in value
    status, text = _raw(proxy, "GET", "/data/environment", token=False, Cookie=f"{name}={value}")
    assert status == 404 and 'services \\"absent\\" not found' in text, text  # forwarded
