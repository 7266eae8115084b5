"""The dashboard's HTTP server (aiohttp): the page, its static files, a JSON API and live streams.

    make_app(source, settings) -> aiohttp.web.Application

Routes (every JSON body is a `dashboard.views` or `dashboard.source` model):

    GET    /                                       the page (static/index.html)
    GET    /static/...                             its script, styles and uPlot (in the wheel)
    GET    /api/info                               mode, cluster, read-only or not
    GET    /api/jobs                               the list now: {jobs, status}
    GET    /api/jobs/stream                        SSE: `status`, `snapshot`, `changes`
    GET    /api/jobs/{ns}/{name}                   the job page's content (404: no such job)
    GET    /api/jobs/{ns}/{name}/stream            SSE: `detail`, `missing`, `problem`
    GET    /api/jobs/{ns}/{name}/logs?replica=R    SSE: `lines` (R: worker-1; none: all merged)
    GET    /api/namespaces/{ns}/permissions        what the user may do there (RBAC)
    POST   /api/jobs/{ns}/{name}/suspend|resume    spec.runPolicy.suspend
    DELETE /api/jobs/{ns}/{name}
    POST   /api/jobs?namespace=NS                  a TFJob from YAML, checked as `taas validate`

Why aiohttp: it is already installed (kopf is built on it), so the dashboard adds no web
framework; it serves static files, streams responses (server-sent events) and has a test client.
Why server-sent events, not websockets: updates only flow to the browser (actions are ordinary
POSTs), EventSource reconnects by itself after an outage, and SSE passes through
`kubectl port-forward` and HTTP proxies unchanged.

Safety: mutating requests must carry the `X-TaaS-Dashboard` header, which a page of another
origin cannot send without a CORS preflight this server never grants (no cross-site request
forgery); on a loopback address the `Host` must be a loopback name (no DNS rebinding); every
answer carries a Content-Security-Policy allowing only this server's own scripts. With
`read_only` (the chart's default) every action is refused before the apiserver is asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from aiohttp import web
from pydantic import BaseModel

from taas_operator.dashboard.source import ActionError, LogLine, Source, refused_everywhere
from taas_operator.documents import InputError, parse_tfjobs

ACTION_HEADER = "X-TaaS-Dashboard"
HEARTBEAT_SECONDS = 15.0
#: A job page is re-sent at most this often (a burst of 64 pod changes becomes one message).
DETAIL_INTERVAL = 0.25
#: Log lines are sent in batches gathered for at most this long.
LOG_BATCH_SECONDS = 0.1
MAX_SUBMIT_BYTES = 1 << 20
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' "
    "data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


class ServerSettings(BaseModel):
    """How the server answers: where it listens (for the Host check) and whether it may act."""

    host: str = "127.0.0.1"
    port: int = 0
    read_only: bool = False


SOURCE: web.AppKey[Source] = web.AppKey("source", Source)
SETTINGS: web.AppKey[ServerSettings] = web.AppKey("settings", ServerSettings)


def _json(model: Any, status: int = 200) -> web.Response:
    body = model.model_dump_json() if isinstance(model, BaseModel) else json.dumps(model)
    return web.Response(text=body, status=status, content_type="application/json")


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Host check on loopback, the action header on writes, security headers on answers."""
    settings = request.app[SETTINGS]
    if _is_loopback(settings.host):
        name = request.host.rsplit(":", 1)[0] if not request.host.endswith("]") else request.host
        if name not in _LOOPBACK_NAMES:
            return _error(421, f"unexpected Host {request.host!r}: open http://127.0.0.1:...")
    if request.method not in ("GET", "HEAD") and request.headers.get(ACTION_HEADER) != "1":
        return _error(403, f"missing header {ACTION_HEADER}: actions come from the page only")
    response = await handler(request)
    response.headers.setdefault("Content-Security-Policy", _CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    response.headers.setdefault("X-Frame-Options", "DENY")
    if request.path.startswith("/api/"):
        response.headers.setdefault("Cache-Control", "no-store")
    return response


class EventStream:
    """A server-sent events response."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
        )

    async def open(self) -> EventStream:
        await self.response.prepare(self.request)
        await self.response.write(b"retry: 2000\n\n")
        return self

    async def send(self, event: str, data: Any) -> None:
        payload = data.model_dump_json() if isinstance(data, BaseModel) else json.dumps(data)
        await self.response.write(f"event: {event}\ndata: {payload}\n\n".encode())

    async def ping(self) -> None:
        await self.response.write(b": ping\n\n")


def _dump(models: list[Any]) -> list[Any]:
    return [m.model_dump(mode="json") for m in models]


# -- reading ---------------------------------------------------------------------------------------
async def index(request: web.Request) -> web.StreamResponse:
    page = resources.files("taas_operator.dashboard") / "static" / "index.html"
    return web.Response(text=page.read_text(encoding="utf-8"), content_type="text/html")


async def info(request: web.Request) -> web.Response:
    source = request.app[SOURCE]
    data = dict(source.info())
    data["readOnly"] = data.get("readOnly", False) or request.app[SETTINGS].read_only
    return _json(data)


async def jobs(request: web.Request) -> web.Response:
    board = request.app[SOURCE].board
    return _json({"jobs": _dump(board.summaries()), "status": board.status()})


async def jobs_stream(request: web.Request) -> web.StreamResponse:
    board = request.app[SOURCE].board
    stream = await EventStream(request).open()
    sub = board.subscribe()
    try:
        while True:
            try:
                update = await asyncio.wait_for(sub.next(), HEARTBEAT_SECONDS)
            except TimeoutError:
                await stream.ping()
                continue
            if update.status is not None:
                await stream.send("status", update.status)
            if update.snapshot is not None:
                await stream.send("snapshot", _dump(update.snapshot))
            elif update.upserts or update.removals:
                changes = {
                    "upserts": _dump(update.upserts),
                    "removals": [list(k) for k in update.removals],
                }
                await stream.send("changes", changes)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        board.unsubscribe(sub)
    return stream.response


async def job(request: web.Request) -> web.Response:
    source = request.app[SOURCE]
    ns, name = request.match_info["ns"], request.match_info["name"]
    watch = await source.open_job(ns, name)
    try:
        detail = watch.detail()
        if watch.problem and detail is None:
            return _error(503, watch.problem)
        if detail is None:
            return _error(404, f"TFJob {ns}/{name} not found")
        return _json(detail)
    finally:
        await source.release_job(watch)


async def job_stream(request: web.Request) -> web.StreamResponse:
    source = request.app[SOURCE]
    ns, name = request.match_info["ns"], request.match_info["name"]
    stream = await EventStream(request).open()
    watch = await source.open_job(ns, name)
    wake = watch.subscribe()
    try:
        while True:
            try:
                await asyncio.wait_for(wake.wait(), HEARTBEAT_SECONDS)
            except TimeoutError:
                await stream.ping()
                continue
            wake.clear()
            detail = watch.detail()
            await stream.send("problem", {"problem": watch.problem})
            if detail is not None:
                await stream.send("detail", detail)
            elif watch.loaded and not watch.problem:
                await stream.send("missing", {"message": f"TFJob {ns}/{name} not found"})
            await asyncio.sleep(DETAIL_INTERVAL)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        watch.unsubscribe(wake)
        await source.release_job(watch)
    return stream.response


async def logs(request: web.Request) -> web.StreamResponse:
    source = request.app[SOURCE]
    ns, name = request.match_info["ns"], request.match_info["name"]
    replica = request.query.get("replica") or None
    stream = await EventStream(request).open()
    queue: asyncio.Queue[LogLine | Exception | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for line in source.logs(ns, name, replica):
                await queue.put(line)
            await queue.put(None)
        except (ActionError, Exception) as exc:  # shown on the page, the stream stays open
            await queue.put(exc)

    task = asyncio.create_task(pump())
    try:
        while True:
            try:
                first = await asyncio.wait_for(queue.get(), HEARTBEAT_SECONDS)
            except TimeoutError:
                await stream.ping()
                continue
            batch, deadline = [first], time.monotonic() + LOG_BATCH_SECONDS
            while not isinstance(batch[-1], Exception | None) and time.monotonic() < deadline:
                try:
                    batch.append(queue.get_nowait())
                except asyncio.QueueEmpty:
                    await asyncio.sleep(0.02)
            lines = [b.model_dump() for b in batch if isinstance(b, LogLine)]
            if lines:
                await stream.send("lines", lines)
            tail = batch[-1]
            if isinstance(tail, Exception):
                message = tail.message if isinstance(tail, ActionError) else str(tail)
                await stream.send("problem", {"problem": message})
                break
            if tail is None:
                await stream.send("end", {})
                break
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    return stream.response


async def permissions(request: web.Request) -> web.Response:
    if request.app[SETTINGS].read_only:
        return _json(refused_everywhere("this dashboard is read-only (started with --read-only)"))
    return _json(await request.app[SOURCE].permissions(request.match_info["ns"]))


# -- acting ----------------------------------------------------------------------------------------
async def _act(request: web.Request, action: Callable[[], Awaitable[Any]]) -> web.Response:
    if request.app[SETTINGS].read_only:
        return _error(403, "this dashboard is read-only (started with --read-only)")
    try:
        result = await action()
    except ActionError as exc:
        return _error(exc.status, exc.message)
    return _json(result if result is not None else {"ok": True})


async def suspend(request: web.Request) -> web.Response:
    ns, name = request.match_info["ns"], request.match_info["name"]
    value = request.match_info["verb"] == "suspend"
    return await _act(request, lambda: request.app[SOURCE].set_suspend(ns, name, value))


async def delete(request: web.Request) -> web.Response:
    ns, name = request.match_info["ns"], request.match_info["name"]
    return await _act(request, lambda: request.app[SOURCE].delete(ns, name))


async def submit(request: web.Request) -> web.Response:
    namespace = request.query.get("namespace") or None
    if request.content_length and request.content_length > MAX_SUBMIT_BYTES:
        return _error(413, "the YAML is larger than 1 MiB")
    text = await request.text()
    try:
        jobs = parse_tfjobs(text, "the YAML", namespace)
    except InputError as exc:
        return _error(422, str(exc))
    if len(jobs) != 1:
        return _error(422, f"the YAML holds {len(jobs)} TFJobs; submit one at a time")
    manifest = jobs[0].to_dict()
    manifest.pop("status", None)
    manifest["metadata"]["namespace"] = jobs[0].namespace

    async def create() -> dict[str, str]:
        ns, name = await request.app[SOURCE].create(manifest)
        return {"namespace": ns, "name": name}

    return await _act(request, create)


def make_app(source: Source, settings: ServerSettings) -> web.Application:
    """The application for `source`; the caller runs it (see dashboard.serve)."""
    app = web.Application(middlewares=[guard], client_max_size=MAX_SUBMIT_BYTES + 4096)
    app[SOURCE] = source
    app[SETTINGS] = settings
    static = resources.files("taas_operator.dashboard") / "static"
    app.router.add_get("/", index)
    app.router.add_static("/static/", str(static))
    app.router.add_get("/api/info", info)
    app.router.add_get("/api/jobs", jobs)
    app.router.add_post("/api/jobs", submit)
    app.router.add_get("/api/jobs/stream", jobs_stream)
    app.router.add_get("/api/jobs/{ns}/{name}", job)
    app.router.add_delete("/api/jobs/{ns}/{name}", delete)
    app.router.add_get("/api/jobs/{ns}/{name}/stream", job_stream)
    app.router.add_get("/api/jobs/{ns}/{name}/logs", logs)
    app.router.add_post("/api/jobs/{ns}/{name}/{verb:suspend|resume}", suspend)
    app.router.add_get("/api/namespaces/{ns}/permissions", permissions)

    async def lifecycle(app: web.Application) -> Any:
        await source.start()
        yield
        await source.close()

    app.cleanup_ctx.append(lifecycle)
    return app
