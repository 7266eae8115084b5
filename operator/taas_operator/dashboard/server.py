"""The dashboard's HTTP server (aiohttp): the page, its static files, a JSON API and live streams.

Over 400 lines: every route of the page's API in one file, so what each URL does, and which
checks it passes first, reads in one place.

    make_app(gate, settings) -> aiohttp.web.Application

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
    POST   /api/session                            sign in (--auth kubernetes): {"token": ...}
    DELETE /api/session                            sign out
    POST   /api/jobs/{ns}/{name}/suspend|resume    spec.runPolicy.suspend
    DELETE /api/jobs/{ns}/{name}
    POST   /api/jobs?namespace=NS                  a TFJob from YAML, checked as `taas validate`
    POST   /api/jobs/preview?namespace=NS          the YAML the Submit form makes (form.py)
    POST   /api/jobs/form?namespace=NS             the same, created (and a program's ConfigMap)

Why aiohttp: it is already installed (kopf is built on it), so the dashboard adds no web
framework; it serves static files, streams responses (server-sent events) and has a test client.
Why server-sent events, not websockets: updates only flow to the browser (actions are ordinary
POSTs), EventSource reconnects by itself after an outage, and SSE passes through
`kubectl port-forward` and HTTP proxies unchanged.

Safety (`dashboard.guard` says the order): Host and Origin checked whatever the bind, a
viewer admitted by the gate (`dashboard.access`: a per-run token, or each viewer's own
Kubernetes token), the action header on writes. Namespaces and names in a path are checked as
Kubernetes names before anything else is done for them. A submitted YAML or form (its preview
too) is read only after the read-only and permission checks, and parsed off the event loop (the
bounded loader; the form's capped fields). Live streams are capped per viewer and in all
(`dashboard.streams`), a job page's watches are shared and capped by the source, and a log
follows through a buffer that drops the oldest lines for a slow reader and says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from aiohttp import web
from pydantic import BaseModel

from taas_operator.api.names import InvalidName, check_name, check_namespace
from taas_operator.dashboard import form
from taas_operator.dashboard.access import Gate, Refusal, ViewerGate, replaced, session_cookie
from taas_operator.dashboard.guard import (
    ALLOWED_HOSTS,
    GATE,
    allowed_hosts,
    error,
    guard,
    viewer_of,
)
from taas_operator.dashboard.source import ActionError, LogLine, Source, refused_everywhere
from taas_operator.dashboard.streams import EventStream, LogBuffer, StreamSlots
from taas_operator.documents import InputError, parse_tfjobs
from taas_operator.runtoken import set_cookie

HEARTBEAT_SECONDS = 15.0
#: A job page is re-sent at most this often (a burst of 64 pod changes becomes one message).
DETAIL_INTERVAL = 0.25
#: Log lines are sent in batches gathered for at most this long.
LOG_BATCH_SECONDS = 0.1
#: Log lines held for one slow reader before the oldest are dropped (and the page told).
LOG_BUFFER_LINES = 2000
MAX_SUBMIT_BYTES = 1 << 20
FORM_TOO_LARGE = (
    "the form is larger than 1 MiB; fix: a program that large goes in an image (docs/your-code.md)"
)
#: Live streams (SSE) one viewer may hold open, one identity group (`shares`: the
#: ServiceAccounts of one namespace; half that once half the total is open), the server in all.
STREAMS_PER_VIEWER, STREAMS_PER_GROUP, STREAMS_TOTAL = 16, 16, 64


class ServerSettings(BaseModel):
    """How the server answers: where it listens, the names it answers to, whether it may act."""

    host: str = "127.0.0.1"
    port: int = 0
    read_only: bool = False
    #: Host names besides the loopback names and the bound address (an Ingress's, say).
    allowed_hosts: list[str] = []


SETTINGS: web.AppKey[ServerSettings] = web.AppKey("settings", ServerSettings)
SLOTS: web.AppKey[StreamSlots] = web.AppKey("slots", StreamSlots)


def _json(model: Any, status: int = 200) -> web.Response:
    body = model.model_dump_json() if isinstance(model, BaseModel) else json.dumps(model)
    return web.Response(text=body, status=status, content_type="application/json")


def _source(request: web.Request) -> Source:
    return viewer_of(request).source


def _namespace(request: web.Request) -> str:
    try:
        return check_namespace(request.match_info["ns"])
    except InvalidName as exc:
        raise Refusal(400, str(exc)) from None


def _target(request: web.Request) -> tuple[str, str]:
    """The (namespace, name) of the path, checked as Kubernetes names (else 400)."""
    try:
        return _namespace(request), check_name(request.match_info["name"])
    except InvalidName as exc:
        raise Refusal(400, str(exc)) from None


def _dump(models: list[Any]) -> list[Any]:
    return [m.model_dump(mode="json") for m in models]


# -- reading ---------------------------------------------------------------------------------------
async def index(request: web.Request) -> web.StreamResponse:
    page = resources.files("taas_operator.dashboard") / "static" / "index.html"
    return web.Response(text=page.read_text(encoding="utf-8"), content_type="text/html")


async def info(request: web.Request) -> web.Response:
    viewer = viewer_of(request)
    data = dict(viewer.source.info())
    data["readOnly"] = data.get("readOnly", False) or request.app[SETTINGS].read_only
    data["auth"] = request.app[GATE].mode
    if viewer.name:
        data["user"] = viewer.name
    return _json(data)


async def jobs(request: web.Request) -> web.Response:
    board = _source(request).board
    return _json({"jobs": _dump(board.summaries()), "status": board.status()})


async def jobs_stream(request: web.Request) -> web.StreamResponse:
    viewer = viewer_of(request)
    source = viewer.source
    board = source.board
    with request.app[SLOTS].take(viewer):
        stream = EventStream(request)
        sub = board.subscribe()
        try:
            await stream.open()
            while not replaced(viewer, source):
                try:
                    async with asyncio.timeout(HEARTBEAT_SECONDS):
                        update = await sub.next()
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
    source = _source(request)
    ns, name = _target(request)
    watch = await source.open_job(ns, name)
    try:
        detail = watch.detail()
        if watch.problem and detail is None:
            return error(503, watch.problem)
        if detail is None:
            return error(404, f"TFJob {ns}/{name} not found")
        return _json(detail)
    finally:
        await source.release_job(watch)


async def job_stream(request: web.Request) -> web.StreamResponse:
    viewer = viewer_of(request)
    source = viewer.source
    ns, name = _target(request)
    with request.app[SLOTS].take(viewer):
        # The whole lifetime in one try: a request cancelled at any point (while the watch's
        # first look waits, while the answer starts) releases its watch.
        watch = wake = None
        stream = EventStream(request)
        try:
            watch = await source.open_job(ns, name)
            wake = watch.subscribe()
            await stream.open()
            while not replaced(viewer, source):
                try:
                    async with asyncio.timeout(HEARTBEAT_SECONDS):
                        await wake.wait()
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
            if watch is not None:
                if wake is not None:
                    watch.unsubscribe(wake)
                await source.release_job(watch)
    return stream.response


async def logs(request: web.Request) -> web.StreamResponse:
    viewer = viewer_of(request)
    source = viewer.source
    ns, name = _target(request)
    replica = request.query.get("replica") or None
    if replica is not None and len(replica) > 253:
        raise Refusal(400, "replica: at most 253 characters (worker-1, ps-0, chief-0, ...)")
    with request.app[SLOTS].take(viewer):
        stream = EventStream(request)
        buffer: LogBuffer[LogLine | Exception | None] = LogBuffer(LOG_BUFFER_LINES)

        async def pump() -> None:
            try:
                async for line in source.logs(ns, name, replica):
                    buffer.put(line)
                buffer.put(None)
            except Exception as exc:  # ActionError and the rest: shown on the page
                buffer.put(exc)

        task = asyncio.create_task(pump())
        try:
            await stream.open()
            await _send_logs(stream, buffer, lambda: replaced(viewer, source))
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    return stream.response


async def _send_logs(
    stream: EventStream,
    buffer: LogBuffer[LogLine | Exception | None],
    ended: Callable[[], bool],
) -> None:
    """Batches of lines until the log ends or fails (or `ended()`: the viewer's token was
    replaced); a note where lines were dropped."""
    while not ended():
        try:
            async with asyncio.timeout(HEARTBEAT_SECONDS):
                first = await buffer.get()
        except TimeoutError:
            await stream.ping()
            continue
        batch, deadline = [first], time.monotonic() + LOG_BATCH_SECONDS
        while not isinstance(batch[-1], Exception | None) and time.monotonic() < deadline:
            if not buffer.items:
                await asyncio.sleep(0.02)
                continue
            batch.append(buffer.items.popleft())
        lines = [b.model_dump() for b in batch if isinstance(b, LogLine)]
        dropped = buffer.take_dropped()
        if dropped:
            note = f"(taas dashboard: {dropped} older lines dropped: this page read too slowly)"
            lines.insert(0, {"replica": "dashboard", "text": note})
        if lines:
            await stream.send("lines", lines)
        tail = batch[-1]
        if isinstance(tail, Exception):
            message = tail.message if isinstance(tail, ActionError) else str(tail)
            await stream.send("problem", {"problem": message})
            return
        if tail is None:
            await stream.send("end", {})
            return


async def permissions(request: web.Request) -> web.Response:
    ns = _namespace(request)
    if request.app[SETTINGS].read_only:
        return _json(refused_everywhere("this dashboard is read-only (started with --read-only)"))
    return _json(await _source(request).permissions(ns))


# -- signing in (--auth kubernetes) ---------------------------------------------------------------
async def sign_in(request: web.Request) -> web.Response:
    gate = request.app[GATE]
    if not isinstance(gate, ViewerGate):
        return error(404, "this dashboard signs nobody in: open the URL taas dashboard printed")
    if request.content_length is None or request.content_length > 20_000:
        return error(413, 'send {"token": "..."} (at most 16 KiB)')
    try:
        token = str((await request.json()).get("token") or "").strip()
    except (ValueError, AttributeError):
        return error(400, 'send {"token": "..."}: your Kubernetes bearer token')
    viewer, session = await gate.new_session(token)
    response = _json({"user": viewer.name})
    set_cookie(response, session_cookie(request), session, request.secure)
    return response


async def sign_out(request: web.Request) -> web.Response:
    gate = request.app[GATE]
    if isinstance(gate, ViewerGate):
        gate.end_session(request.cookies.get(session_cookie(request), ""))
    response = _json({"ok": True})
    set_cookie(response, session_cookie(request), "", request.secure)
    return response


# -- acting ----------------------------------------------------------------------------------------
def _writable(request: web.Request) -> None:
    if request.app[SETTINGS].read_only:
        raise Refusal(403, "this dashboard is read-only (started with --read-only)")


async def _act(action: Callable[[], Awaitable[Any]]) -> web.Response:
    try:
        result = await action()
    except ActionError as exc:
        return error(exc.status, exc.message)
    return _json(result if result is not None else {"ok": True})


async def suspend(request: web.Request) -> web.Response:
    _writable(request)
    ns, name = _target(request)
    value = request.match_info["verb"] == "suspend"
    return await _act(lambda: _source(request).set_suspend(ns, name, value))


async def delete(request: web.Request) -> web.Response:
    _writable(request)
    ns, name = _target(request)
    return await _act(lambda: _source(request).delete(ns, name))


async def _may_create(request: web.Request, too_large: str) -> tuple[Source, str | None, str]:
    """The source, the ?namespace= given (checked) and where the TFJob goes, once the
    dashboard is writable, RBAC lets the viewer create TFJobs there and the body is at most
    MAX_SUBMIT_BYTES (else 413 `too_large`); else a Refusal, before the body is read."""
    _writable(request)
    source = _source(request)
    namespace = request.query.get("namespace") or None
    if namespace is not None:
        try:
            check_namespace(namespace, "namespace (the ?namespace= of the request)")
        except InvalidName as exc:
            raise Refusal(400, str(exc)) from None
    where = namespace or str(source.info().get("defaultNamespace") or "default")
    allowed = (await source.permissions(where)).create
    if not allowed.allowed:
        raise Refusal(403, allowed.reason)
    if request.content_length and request.content_length > MAX_SUBMIT_BYTES:
        raise Refusal(413, too_large)
    return source, namespace, where


async def submit(request: web.Request) -> web.Response:
    """A TFJob from YAML: refused when read-only or not allowed before the body is even read."""
    source, namespace, _ = await _may_create(request, "the YAML is larger than 1 MiB")
    text = await request.text()
    try:
        jobs = await asyncio.to_thread(parse_tfjobs, text, "the YAML", namespace)
    except InputError as exc:
        return error(422, str(exc))
    if len(jobs) != 1:
        return error(422, f"the YAML holds {len(jobs)} TFJobs; submit one at a time")
    manifest = jobs[0].to_dict()
    manifest.pop("status", None)
    manifest["metadata"]["namespace"] = jobs[0].namespace

    async def create() -> dict[str, str]:
        ns, name = await source.create(manifest)
        return {"namespace": ns, "name": name}

    return await _act(create)


async def _form_job(
    request: web.Request, sending: bool
) -> tuple[Source, form.FormJob | web.Response]:
    """The Submit form's job (dashboard.form), past the YAML submit's checks; or its 422."""
    source, _, where = await _may_create(request, FORM_TOO_LARGE)
    body = await request.read()
    try:
        return source, await asyncio.to_thread(form.made_of, body, where, sending)
    except form.FormInvalid as exc:
        return source, _json(exc.answer(), 422)


async def preview_form(request: web.Request) -> web.Response:
    """The YAML the Submit form's fields make, or each field's problem; nothing is sent."""
    _, made = await _form_job(request, sending=False)
    if isinstance(made, web.Response):
        return made
    return _json({"namespace": made.tfjob["metadata"]["namespace"], "yaml": made.yaml})


async def submit_form(request: web.Request) -> web.Response:
    """The Submit form's TFJob created, then a program's ConfigMap (owned by the TFJob)."""
    source, made = await _form_job(request, sending=True)
    if isinstance(made, web.Response):
        return made
    tfjob, program = made.tfjob, made.program

    async def create() -> dict[str, str]:
        if program is None:
            ns, name = await source.create(tfjob)
        else:
            ns, name = await source.create_program(program, form.FORM_NAMES)
        return {"namespace": ns, "name": name}

    return await _act(create)


@web.middleware
async def refusals(request: web.Request, handler: Any) -> web.StreamResponse:
    """A Refusal raised by a handler (a bad name, a cap reached) as its JSON error."""
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except Refusal as refusal:
        return error(refusal.status, refusal.message)
    except ActionError as exc:
        return error(exc.status, exc.message)


def make_app(gate: Gate, settings: ServerSettings) -> web.Application:
    """The application behind `gate`; the caller runs it (see dashboard.serve)."""
    app = web.Application(middlewares=[guard, refusals], client_max_size=MAX_SUBMIT_BYTES + 4096)
    app[GATE] = gate
    app[SETTINGS] = settings
    app[ALLOWED_HOSTS] = allowed_hosts(settings.host, settings.allowed_hosts)
    app[SLOTS] = StreamSlots(STREAMS_PER_VIEWER, STREAMS_TOTAL, STREAMS_PER_GROUP)
    static = resources.files("taas_operator.dashboard") / "static"
    app.router.add_get("/", index)
    app.router.add_static("/static/", str(static))
    app.router.add_get("/api/info", info)
    app.router.add_post("/api/session", sign_in)
    app.router.add_delete("/api/session", sign_out)
    app.router.add_get("/api/jobs", jobs)
    app.router.add_post("/api/jobs", submit)
    app.router.add_post("/api/jobs/preview", preview_form)
    app.router.add_post("/api/jobs/form", submit_form)
    app.router.add_get("/api/jobs/stream", jobs_stream)
    app.router.add_get("/api/jobs/{ns}/{name}", job)
    app.router.add_delete("/api/jobs/{ns}/{name}", delete)
    app.router.add_get("/api/jobs/{ns}/{name}/stream", job_stream)
    app.router.add_get("/api/jobs/{ns}/{name}/logs", logs)
    app.router.add_post("/api/jobs/{ns}/{name}/{verb:suspend|resume}", suspend)
    app.router.add_get("/api/namespaces/{ns}/permissions", permissions)

    async def lifecycle(app: web.Application) -> Any:
        await gate.start()
        yield
        await gate.close()

    app.cleanup_ctx.append(lifecycle)
    return app
