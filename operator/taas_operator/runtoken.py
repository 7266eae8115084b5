"""The per-run token of a web server TaaS runs on this machine (`taas dashboard`'s default
`--auth token`, and `taas tensorboard JOB`'s local proxy), and the sessions it opens.

    gate = RunToken("dashboard")
    gate.entry("http://127.0.0.1:8765/")      # the URL to print: ...?token=TOKEN
    gate.admit(request) -> True | web.Response (303 to the page, setting the cookie) | False
    sessions = Sessions(limit, idle_seconds, max_seconds)    # random ids -> values, bounded

A random token is made for each run and printed once, in the URL. Opening that URL answers 303
to the same path without the token and sets a cookie holding a fresh random session id, never
the token (HttpOnly, SameSite=Strict, named `taas-<what>-<port>`, the port the server listens
on, so two servers on two ports of one machine keep their own). Scripts send
`Authorization: Bearer TOKEN` instead. Sessions are bounded (`MAX_SESSIONS`, the oldest ended
first) and expire (`SESSION_IDLE_SECONDS` without a request, `SESSION_MAX_SECONDS` after they
began): reopen the printed URL for a new one.

What a cookie cannot do: a browser sends a host's cookies to every port of that host (RFC 6265),
so a server on another port of 127.0.0.1 that the browser visits can read the session id and
use it until it expires; it never learns the run's token.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from aiohttp import web

T = TypeVar("T")

#: Browser sessions one token gate keeps; the oldest is ended when another begins.
MAX_SESSIONS = 16
SESSION_IDLE_SECONDS = 8 * 3600.0
SESSION_MAX_SECONDS = 24 * 3600.0


@dataclass
class _Session(Generic[T]):
    value: T
    began: float = field(default_factory=time.monotonic)
    seen: float = field(default_factory=time.monotonic)


class Sessions(Generic[T]):
    """Random session ids -> values: at most `limit` (the oldest ended first), each ended after
    `idle` seconds without use or `longest` seconds after it began."""

    def __init__(self, limit: int, idle: float, longest: float) -> None:
        self.limit, self.idle, self.longest = limit, idle, longest
        self.held: OrderedDict[str, _Session[T]] = OrderedDict()

    def begin(self, value: T) -> str:
        """A new session for `value`: its id, for the cookie."""
        self.expire()
        while len(self.held) >= self.limit:
            self.held.popitem(last=False)
        session = secrets.token_urlsafe(32)
        self.held[session] = _Session(value)
        return session

    def get(self, session: str) -> T | None:
        """The session's value (its use noted), None when it is unknown or expired."""
        held = self.held.get(session) if session else None
        if held is None:
            return None
        now = time.monotonic()
        if now - held.seen > self.idle or now - held.began > self.longest:
            del self.held[session]
            return None
        held.seen = now
        return held.value

    def end(self, session: str) -> None:
        self.held.pop(session, None)

    def end_where(self, value: T) -> None:
        """End every session of `value`."""
        for session in [s for s, held in self.held.items() if held.value == value]:
            del self.held[session]

    def count(self, value: T) -> int:
        return sum(1 for held in self.held.values() if held.value == value)

    def oldest_of(self, value: T) -> str | None:
        return next((s for s, held in self.held.items() if held.value == value), None)

    def expire(self) -> None:
        now = time.monotonic()
        for session, held in list(self.held.items()):
            if now - held.seen > self.idle or now - held.began > self.longest:
                del self.held[session]

    def clear(self) -> None:
        self.held.clear()


def bearer(request: web.Request) -> str:
    """The request's `Authorization: Bearer` token, "" when there is none."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def local_port(request: web.Request) -> int:
    """The port the request arrived on (this server's own, whatever the Host header says)."""
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    return int(sockname[1]) if isinstance(sockname, tuple) and len(sockname) >= 2 else 0


def cookie_name(what: str, request: web.Request) -> str:
    """`taas-<what>-<port>`: one cookie per server of this machine."""
    return f"taas-{what}-{local_port(request)}"


def set_cookie(response: web.StreamResponse, name: str, value: str, secure: bool) -> None:
    """Set (or with "" clear) a session cookie: HttpOnly, SameSite=Strict, path /."""
    if value:
        response.set_cookie(name, value, httponly=True, samesite="Strict", path="/", secure=secure)
    else:
        response.del_cookie(name, path="/")


class RunToken:
    """One secret per run (see the module); `what` names the cookie (dashboard, tensorboard)."""

    def __init__(self, what: str, token: str | None = None) -> None:
        self.what = what
        self.token = token or secrets.token_urlsafe(32)
        self.sessions: Sessions[bool] = Sessions(
            MAX_SESSIONS, SESSION_IDLE_SECONDS, SESSION_MAX_SECONDS
        )

    def entry(self, url: str) -> str:
        """`url` with the token: what to print (the only place the token is shown)."""
        return f"{url}?token={self.token}"

    def matches(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())

    def admit(self, request: web.Request) -> bool | web.Response:
        """True: the token or a session came with `request`; a 303 setting a new session's
        cookie for the printed URL (?token=); False: neither."""
        if self.matches(request.query.get("token", "")):
            response = web.Response(status=303, headers={"Location": safe_path(request)})
            set_cookie(
                response, cookie_name(self.what, request), self.sessions.begin(True), request.secure
            )
            return response
        if self.matches(bearer(request)):
            return True
        return bool(self.sessions.get(request.cookies.get(cookie_name(self.what, request), "")))


def safe_path(request: web.Request) -> str:
    """The request's path as it came, escaped (for a Location header); "/" for one a browser
    could read as another site's (`//host`, a backslash) or with control characters."""
    path = request.raw_path.partition("?")[0]
    plain = path.startswith("/") and not path.startswith("//") and "\\" not in path
    return path if plain and path.isprintable() else "/"
