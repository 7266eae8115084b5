"""A local HTTP proxy to one Service port through the apiserver's service proxy.

    proxy = ServiceProxy(transport, namespace, service, port_name)
    await proxy.probe(path) -> (status, text)          # one GET through it, for readiness
    runner = await proxy.listen(host, port) -> (web.AppRunner, bound port)

What `kubectl port-forward` does for a Service, over plain HTTPS to the apiserver
(`/api/v1/namespaces/NS/services/http:NAME:PORT/proxy/...`), with the caller's own identity:
RBAC decides (`get` on `services/proxy`), no SPDY. Only that one Service port is reachable: a
request path is checked segment by segment (no `..`, no encoded `/`, `\\` or `.`), so nothing
can climb out of the proxy prefix to another apiserver path. Requests are bounded (GET, HEAD,
POST; 1 MiB body; 4 KiB URL), so are answers (64 MiB, streamed). The Host header must be a
loopback name (or the address listened on) and the port (a page of another site that resolves
its name to 127.0.0.1 gets 421), and a cross-site Origin is refused: only this machine's
browser talks to it, as with port-forward. And only whoever started it: every request needs the
proxy's per-run token (`runtoken.RunToken`, the dashboard's `--auth token`): the URL printed
with `?token=` sets a session cookie (`taas-tensorboard-<port>`) and leads to the page, scripts
send `Authorization: Bearer TOKEN`; anything else is 401 before anything is forwarded (another
user of this machine cannot borrow your Kubernetes identity through it). Neither the token nor
the cookie is forwarded.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from aiohttp import ClientError, web

from taas_operator.api.names import segment
from taas_operator.apiserver.transport import Transport
from taas_operator.runtoken import RunToken

_METHODS = frozenset({"GET", "HEAD", "POST"})
_MAX_BODY = 1 << 20
_MAX_URL = 4096
_MAX_ANSWER = 64 << 20
_CHUNK = 64 << 10
#: One path segment: unreserved characters and percent escapes, never of `/`, `\\` or `.`.
_SEGMENT = re.compile(r"(?:[A-Za-z0-9_~!$&'()*+,;=:@.-]|%(?![2][EeFf]|5[Cc])[0-9A-Fa-f]{2})*")
_PASSED_UP = ("Accept", "Content-Type", "X-XSRF-Protected", "If-None-Match", "If-Modified-Since")
_PASSED_DOWN = ("Content-Type", "Cache-Control", "ETag", "Last-Modified", "Content-Disposition")
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def checked_tail(path: str) -> str | None:
    """`path` (as the browser sent it, escaped) when every segment is plain; else None."""
    parts = path.lstrip("/").split("/")
    if any(part in (".", "..") or not _SEGMENT.fullmatch(part) for part in parts):
        return None
    return "/".join(parts)


class ServiceProxy:
    """Forwards HTTP to `service`'s `port_name` port in `namespace` (see the module)."""

    def __init__(self, transport: Transport, namespace: str, service: str, port_name: str) -> None:
        self.transport = transport
        self.prefix = (
            f"/api/v1/namespaces/{segment(namespace)}/services/"
            f"{segment(f'http:{service}:{port_name}')}/proxy/"
        )
        self.port = 0
        self.host = "127.0.0.1"
        self.run = RunToken("tensorboard")

    async def probe(self, path: str) -> tuple[int, str]:
        """GET `path` of the Service through the apiserver: (status, the start of the text)."""
        try:
            async with self.transport.forward("GET", self.prefix + path, "", {}) as response:
                text = (await response.content.read(2048)).decode(errors="replace")
                return response.status, text
        except (ClientError, OSError, TimeoutError) as err:
            return 0, f"{type(err).__name__}: {err}"

    def entry(self) -> str:
        """The URL to print (with the token), once listening."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return self.run.entry(f"http://{shown}:{self.port}/")

    def _refusal(self, request: web.Request) -> web.Response | None:
        host = request.headers.get("Host", "")
        shown = f"[{self.host}]" if ":" in self.host else self.host
        allowed = {f"{name}:{self.port}" for name in (*_LOOPBACK, shown)}
        if host not in allowed:
            return web.Response(status=421, text=f"unknown Host {host!r}: open the printed URL")
        origin = request.headers.get("Origin")
        if origin and origin.split("://", 1)[-1] not in allowed:
            return web.Response(status=403, text="cross-site request refused")
        admitted = self.run.admit(request)
        if isinstance(admitted, web.Response):
            return admitted
        if not admitted:
            return web.Response(
                status=401,
                text="this TensorBoard needs its token: open the URL that `taas tensorboard` "
                "printed (it ends in ?token=...), or send Authorization: Bearer TOKEN",
            )
        if request.method not in _METHODS:
            return web.Response(status=405, text=f"{request.method} is not forwarded")
        if len(request.raw_path) > _MAX_URL:
            return web.Response(status=414, text="URL too long")
        if request.content_length is not None and request.content_length > _MAX_BODY:
            return web.Response(status=413, text="request body too large")
        return None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        refused = self._refusal(request)
        if refused is not None:
            return refused
        raw_path, _, query = request.raw_path.partition("?")
        tail = checked_tail(raw_path)
        if tail is None:
            return web.Response(status=400, text="path refused: a segment is not plain")
        body = await request.content.read(_MAX_BODY + 1) if request.can_read_body else None
        if body is not None and len(body) > _MAX_BODY:
            return web.Response(status=413, text="request body too large")
        headers = {k: request.headers[k] for k in _PASSED_UP if k in request.headers}
        try:
            async with self.transport.forward(
                request.method, self.prefix + tail, query, headers, body
            ) as answer:
                return await self._relay(request, answer)
        except (ClientError, OSError, TimeoutError) as err:
            return web.Response(status=502, text=f"the API server did not answer: {err}")

    async def _relay(self, request: web.Request, answer: Any) -> web.StreamResponse:
        response = web.StreamResponse(status=answer.status)
        for key in _PASSED_DOWN:
            if key in answer.headers:
                response.headers[key] = answer.headers[key]
        response.headers["X-Content-Type-Options"] = "nosniff"
        await response.prepare(request)
        sent = 0
        async for chunk in answer.content.iter_chunked(_CHUNK):
            sent += len(chunk)
            if sent > _MAX_ANSWER:
                break  # the client sees a truncated answer, never an unbounded one
            await response.write(chunk)
        await response.write_eof()
        return response

    async def listen(self, host: str, port: int) -> tuple[web.AppRunner, int]:
        """Serve on `host`:`port` (0: a free port); the runner (clean it up) and the port."""
        # A request aiohttp's own parser refuses (a line past 8 KiB) gets its 400; its log
        # record (a traceback) must not reach the user's terminal.
        logging.getLogger("aiohttp.server").addHandler(logging.NullHandler())
        app = web.Application(client_max_size=_MAX_BODY)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        self.host = host
        server = site._server  # aiohttp keeps the bound sockets there
        sockets = getattr(server, "sockets", None) or []
        self.port = int(sockets[0].getsockname()[1]) if sockets else port
        return runner, self.port
