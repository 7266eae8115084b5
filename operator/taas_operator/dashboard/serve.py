"""Run the dashboard's server: in the foreground (`taas dashboard`) or beside a local run
(`taas run --dashboard`, a thread with its own event loop).

    await serve(gate, settings, ready=print_url)       # until cancelled; ready(entry URL)
    server = Background.start(gate, settings)          # .url  .entry  .stop()

The port is bound before the URL is printed, so the URL always works when it is shown; port 0
picks a free one. The URL shown is the gate's entry (`dashboard.access`: with the run's
token). A port already taken is an InputError naming it and the fix (exit 2).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

from aiohttp import web

from taas_operator.dashboard.access import Gate, TokenGate
from taas_operator.dashboard.server import ServerSettings, make_app
from taas_operator.documents import InputError


def url_of(settings: ServerSettings, port: int) -> str:
    host = settings.host
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    shown = f"[{shown}]" if ":" in shown else shown
    return f"http://{shown}:{port}/"


def entry_of(gate: Gate, url: str) -> str:
    """The URL to print: with the token for a token gate, else `url`."""
    return gate.entry(url) if isinstance(gate, TokenGate) else url


async def _start(gate: Gate, settings: ServerSettings) -> tuple[web.AppRunner, str]:
    # handler_cancellation: a client that goes away ends its stream at once (its slot is freed)
    runner = web.AppRunner(
        make_app(gate, settings), access_log=None, shutdown_timeout=1.0, handler_cancellation=True
    )
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port, reuse_address=True)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise InputError(
            f"--port {settings.port}: cannot listen on {settings.host}:{settings.port} "
            f"({exc.strerror}); fix: choose another --port (0 picks a free one)"
        ) from None
    port = settings.port
    for address in runner.addresses:
        port = int(address[1])
        break
    return runner, url_of(settings, port)


async def serve(
    gate: Gate, settings: ServerSettings, ready: Callable[[str], None] | None = None
) -> None:
    """Serve until cancelled; `ready(entry URL)` once the port is bound."""
    runner, url = await _start(gate, settings)
    try:
        if ready is not None:
            ready(entry_of(gate, url))
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


class Background:
    """The server in a daemon thread, for the length of a local run."""

    def __init__(self) -> None:
        self.url = ""
        self.entry = ""
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="dashboard")
        self.runner: web.AppRunner | None = None

    @classmethod
    def start(cls, gate: Gate, settings: ServerSettings) -> Background:
        """Bind and serve; InputError when the port cannot be had."""
        server = cls()
        server.thread.start()
        future = asyncio.run_coroutine_threadsafe(_start(gate, settings), server.loop)
        try:
            server.runner, server.url = future.result(timeout=30)
        except BaseException:
            server.loop.call_soon_threadsafe(server.loop.stop)
            raise
        server.entry = entry_of(gate, server.url)
        return server

    def stop(self) -> None:
        if self.runner is not None:
            future = asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop)
            with contextlib.suppress(Exception):  # the process is ending anyway
                future.result(timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
