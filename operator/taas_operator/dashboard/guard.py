"""What every request passes before a handler runs, in this order (nothing is read, parsed or
asked of the apiserver for a request that fails one):

0. Path: one holding a control character once decoded (`%0D%0A`) is 400 (it could never name
   anything, and must not reach a header such as the sign-in redirect's Location).
1. Host: a name this server is known by, whatever address it is bound to: the loopback names
   (`kubectl port-forward` arrives on them), the bound address itself, and `--allow-host` names
   (an Ingress's). Anything else is 421: a page of another site that made its own name resolve
   to this machine (DNS rebinding) reaches nothing.
2. Origin: a request a browser marks as coming from another site or another port (`Origin`
   not the request's own Host, port included, or `Sec-Fetch-Site: cross-site`) is 403, reads
   and streams included.
3. Who: the gate (`dashboard.access`) admits a viewer, else 401 (the page says how to sign in).
4. Writes carry `X-TaaS-Dashboard: 1`, which another origin cannot send without a CORS preflight
   this server never grants (no cross-site request forgery), else 403.
Every answer carries a Content-Security-Policy allowing only this server's own scripts.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from taas_operator.dashboard.access import Gate, Refusal, Viewer

ACTION_HEADER = "X-TaaS-Dashboard"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' "
    "data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
GATE: web.AppKey[Gate] = web.AppKey("gate", Gate)
ALLOWED_HOSTS: web.AppKey[frozenset[str]] = web.AppKey("allowed_hosts", frozenset)
VIEWER: web.RequestKey[Viewer] = web.RequestKey("viewer", Viewer)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def error(status: int, message: str) -> web.Response:
    """A JSON error answer: {"error": message}."""
    return web.Response(
        text=json.dumps({"error": message}), status=status, content_type="application/json"
    )


def allowed_hosts(bind: str, extra: list[str]) -> frozenset[str]:
    """Host names this server answers to (lowercase, no port, IPv6 without brackets)."""
    names = set(LOOPBACK_NAMES)
    try:
        if not ipaddress.ip_address(bind).is_unspecified:
            names.add(bind)
    except ValueError:
        if bind:
            names.add(bind.lower())
    names.update(h.strip().lower().strip("[]") for h in extra if h.strip())
    return frozenset(names)


def host_name(authority: str) -> str:
    """`authority` (a Host header or an origin's netloc) without its port, lowercase."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        return authority[1 : authority.find("]")] if "]" in authority else authority
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def _port(authority: str, scheme: str = "") -> str:
    """The explicit port of `authority` ("" for none or the scheme's default)."""
    authority = authority.strip().lower()
    rest = authority[authority.find("]") + 1 :] if authority.startswith("[") else authority
    port = rest.rsplit(":", 1)[1] if rest.count(":") == 1 else ""
    return "" if (scheme, port) in (("http", "80"), ("https", "443")) else port


def same_origin(origin: str, host: str, allowed: frozenset[str]) -> bool:
    """Whether the `Origin` header names this server: an allowed host name, and the port of the
    request's `Host` (a page on another port of the same machine is another origin)."""
    parts = urlsplit(origin)
    if host_name(parts.netloc) not in allowed:
        return False
    return _port(parts.netloc, parts.scheme) in (_port(host, "http"), _port(host, "https"))


def viewer_of(request: web.Request) -> Viewer:
    """The viewer the gate admitted for `request` (a public path's handler has none: 401)."""
    viewer = request.get(VIEWER)
    if viewer is None:
        raise Refusal(401, "sign in first")
    return viewer


def _public(request: web.Request, gate: Gate) -> bool:
    """The gate lets anyone fetch this path (exact paths; a trailing '/*' is a folder)."""
    path = request.path
    return any(path.startswith(p[:-1]) if p.endswith("/*") else path == p for p in gate.public)


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Host, Origin, who, the action header (see the module); security headers on answers."""
    if not request.path.isprintable():
        return error(400, "the path holds a control character (CR, LF, ...): no such page")
    allowed = request.app[ALLOWED_HOSTS]
    if host_name(request.host) not in allowed:
        return error(421, f"unexpected Host {request.host[:100]!r}: open the URL taas printed")
    origin = request.headers.get("Origin")
    if origin is not None and not same_origin(origin, request.host, allowed):
        return error(403, f"requests from {origin[:100]!r} are refused: use this page itself")
    if request.headers.get("Sec-Fetch-Site") == "cross-site":
        return error(403, "requests from another site are refused: use this page itself")
    gate = request.app[GATE]
    try:
        admitted = await gate.admit(request)
    except Refusal as refusal:
        if not _public(request, gate):
            return _secured(request, _refused(request, refusal, gate))
        admitted = None
    if isinstance(admitted, web.StreamResponse):
        return _secured(request, admitted)
    if admitted is not None:
        request[VIEWER] = admitted
    if request.method not in ("GET", "HEAD") and request.headers.get(ACTION_HEADER) != "1":
        return _secured(
            request, error(403, f"missing header {ACTION_HEADER}: actions come from the page only")
        )
    return _secured(request, await handler(request))


def _refused(request: web.Request, refusal: Refusal, gate: Gate) -> web.StreamResponse:
    if request.path.startswith("/api/"):
        response = error(refusal.status, refusal.message)
        response.headers["X-TaaS-Sign-In"] = gate.mode
        return response
    page = (
        "<!doctype html><meta charset=utf-8><title>TaaS dashboard</title>"
        "<p>This dashboard needs its token. Open the URL that <code>taas dashboard</code> "
        "printed: it ends in <code>?token=</code>.</p>"
    )
    return web.Response(text=page, status=refusal.status, content_type="text/html")


def _secured(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    response.headers.setdefault("Content-Security-Policy", _CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    response.headers.setdefault("X-Frame-Options", "DENY")
    if request.path.startswith("/api/") or request.path == "/":
        response.headers.setdefault("Cache-Control", "no-store")
    return response
