"""A cluster TFJob's TensorBoard, served on this machine.

    serve_cluster_job(client, name, host, port, timeout, ready) -> int   (exit code)

The job must exist (else the client's `TFJob "x" not found` with the fix) and ask for a
TensorBoard with the annotation `taas.dev/tensorboard`: an http(s) URL is printed as it is; no
annotation gets the `kubectl annotate` command that asks the operator for one. For `"true"`, the
operator runs `<job>-tensorboard` (`controller.reconcile.tensorboard`); this waits, at most
`timeout` seconds, until TensorBoard answers through the apiserver, failing early with the
operator's own Warning
(`TensorBoardUnavailable`: the model_dir no pod can mount, say), then serves it on
`host`:`port` through `proxy.ServiceProxy` until Ctrl-C or SIGTERM; the URL printed holds the
proxy's per-run token (nothing is forwarded without it).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from taas_operator.api.constants import REASON_TENSORBOARD_UNAVAILABLE, TENSORBOARD_ANNOTATION
from taas_operator.api.text import printable
from taas_operator.client.errors import ClientError
from taas_operator.tensorboard.objects import (
    tensorboard_link,
    tensorboard_name,
    tensorboard_request,
)
from taas_operator.tensorboard_command.proxy import ServiceProxy

if TYPE_CHECKING:
    from taas_operator.client.jobs import TFJobClient

_EVENTS_EVERY_S = 5.0
EXIT_FAILED, EXIT_INTERRUPTED, EXIT_TERMINATED = 1, 130, 143


class NoTensorBoard(ClientError):
    """The job asks for no TensorBoard, or the operator cannot run one: the message says what
    to do."""


def _say(text: str) -> None:
    print(printable(text), file=sys.stderr, flush=True)


def serve_cluster_job(
    client: TFJobClient,
    name: str,
    host: str,
    port: int,
    timeout: float,
    ready: Callable[[str], None] = print,
) -> int:
    """Serve the job's TensorBoard (see the module); `ready` gets the line with the URL."""
    job = client.get(name)
    ns = job.namespace
    request = tensorboard_request(job)
    if request == "link":
        link = tensorboard_link(job.metadata.annotations.get(TENSORBOARD_ANNOTATION))
        ready(f"TensorBoard of TFJob {ns}/{name} (annotation {TENSORBOARD_ANNOTATION}): {link}")
        return 0
    if request is None:
        raise NoTensorBoard(
            f"TFJob {ns}/{name} asks for no TensorBoard; fix: kubectl annotate tfjob {name} "
            f"-n {ns} {TENSORBOARD_ANNOTATION}=true (the operator then runs one on its "
            f"model_dir), or run TensorBoard on a copy of the model_dir: taas tensorboard DIR"
        )
    return asyncio.run(_serve(client, name, ns, host, port, timeout, ready))


def _operator_problem(client: TFJobClient, name: str, ns: str) -> str | None:
    """The operator's latest TensorBoardUnavailable message for the job, if any."""
    problems = [e for e in client.events(name, ns) if e.reason == REASON_TENSORBOARD_UNAVAILABLE]
    return problems[-1].message if problems else None


async def _serve(
    client: TFJobClient,
    name: str,
    ns: str,
    host: str,
    port: int,
    timeout: float,
    ready: Callable[[str], None],
) -> int:
    transport = client.conn.transport()
    proxy = ServiceProxy(transport, ns, tensorboard_name(name), "http")
    try:
        if not await _wait_ready(client, proxy, name, ns, timeout):
            return EXIT_FAILED
        try:
            runner, _ = await proxy.listen(host, port)
        except OSError as err:
            raise NoTensorBoard(
                f"cannot listen on {host}:{port}: {err.strerror}; fix: --port 0 picks a free one"
            ) from None
        try:
            ready(
                f"TensorBoard of TFJob {ns}/{name} at {proxy.entry()} (through the Kubernetes "
                f"API server, for whoever has this URL; Ctrl-C stops serving, the TensorBoard "
                f"goes on)"
            )
            return await _until_stopped()
        finally:
            await runner.cleanup()
    finally:
        await transport.close()


async def _wait_ready(
    client: TFJobClient, proxy: ServiceProxy, name: str, ns: str, timeout: float
) -> bool:
    deadline = time.monotonic() + timeout
    next_events, said = 0.0, False
    status, text = 0, ""
    while time.monotonic() < deadline:
        status, text = await proxy.probe("data/environment")
        if status == 200:
            return True
        if status in (401, 403):
            raise NoTensorBoard(
                f"the API server refuses to proxy to TensorBoard (HTTP {status}: {text[:200]}); "
                f"fix: ask for a Role granting 'get' on services/proxy in namespace {ns} "
                f"(check with: kubectl auth can-i get services/proxy -n {ns})"
            )
        if time.monotonic() >= next_events:
            next_events = time.monotonic() + _EVENTS_EVERY_S
            problem = await asyncio.to_thread(_operator_problem, client, name, ns)
            if problem:
                raise NoTensorBoard(f"the operator cannot run TFJob {ns}/{name}'s TensorBoard: "
                                    f"{problem}")  # fmt: skip
        if not said:
            _say(f"taas: waiting for TFJob {ns}/{name}'s TensorBoard ({tensorboard_name(name)})")
            said = True
        await asyncio.sleep(1.0)
    _say(
        f"taas: TFJob {ns}/{name}'s TensorBoard did not answer within {timeout:.0f}s (last: HTTP "
        f"{status} {text[:200]!r}); see kubectl get pods -n {ns} -l "
        f"taas.dev/tensorboard-for={name} and kubectl describe tfjob {name} -n {ns}"
    )
    return False


async def _until_stopped() -> int:
    loop = asyncio.get_running_loop()
    stopped: asyncio.Future[int] = loop.create_future()

    def stop(code: int) -> None:
        if not stopped.done():
            stopped.set_result(code)

    for sig, code in ((signal.SIGINT, EXIT_INTERRUPTED), (signal.SIGTERM, EXIT_TERMINATED)):
        loop.add_signal_handler(sig, stop, code)
    try:
        return await stopped
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
