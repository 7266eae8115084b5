"""Who may use the dashboard, and as whom it then acts (`taas dashboard --auth token|kubernetes`).

`token` (the default, as Jupyter and TensorBoard do it): a random token made for each run and
printed once, in the URL (`http://127.0.0.1:8765/?token=...`). Opening that URL sets a cookie
(HttpOnly, SameSite=Strict, named after the token so two dashboards on one machine keep their
own) and redirects to the page without the token; scripts send `Authorization: Bearer TOKEN`.
The dashboard then acts with its kubeconfig's identity, its owner's. Without the token nothing
answers but a 401 saying where the token is, the page itself included: another user of the
machine who can reach 127.0.0.1 can neither read nor act.

`kubernetes` (in a cluster, the chart's): each viewer brings their own Kubernetes bearer token,
passed by an authenticating front proxy as `Authorization: Bearer ...` (oauth2-proxy and the like)
or pasted once on the page's sign-in form (`kubectl create token ...`, an OIDC id-token). The
apiserver says who it is (SelfSubjectReview); every read and action for that viewer is made with
that token, so the apiserver's RBAC decides what each viewer sees and does, and
SelfSubjectAccessReviews, asked as the viewer, decide which buttons the page offers. The
dashboard's own ServiceAccount needs no rights on TFJobs at all. Tokens stay in memory, never in
a cookie (the cookie holds a random session id); at most `MAX_VIEWERS` viewers at once, each
forgotten after `IDLE_SECONDS` without a request.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from aiohttp import web

from taas_operator.dashboard.source import Source

AuthMode = Literal["token", "kubernetes"]
MAX_VIEWERS = 64
IDLE_SECONDS = 3600.0
#: A bearer token longer than this is refused before anything is asked of the apiserver.
MAX_TOKEN_BYTES = 16 * 1024
SESSION_COOKIE = "taas-dashboard-session"


class Refusal(Exception):
    """A request that may not go on: the status and the message the client gets."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass
class Viewer:
    """Someone let in: `key` tells viewers apart (stream caps), `source` is what they see."""

    key: str
    source: Source
    name: str = ""
    last_seen: float = field(default_factory=time.monotonic)
    streams: int = 0


def bearer(request: web.Request) -> str:
    """The request's `Authorization: Bearer` token, "" when there is none."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _cookie(response: web.StreamResponse, name: str, value: str, secure: bool) -> None:
    response.set_cookie(name, value, httponly=True, samesite="Strict", path="/", secure=secure)


class Gate(ABC):
    """Admits requests: a Viewer, or a Refusal / a redirect."""

    mode: AuthMode
    #: Paths anyone may fetch: they do nothing and hold nothing (the sign-in page and its files;
    #: "/static/*" is the folder).
    public: tuple[str, ...] = ()

    @abstractmethod
    async def admit(self, request: web.Request) -> Viewer | web.StreamResponse:
        """The viewer making `request`; raises Refusal (401) when nobody is signed in."""

    @abstractmethod
    async def start(self) -> None:
        """Begin serving (a token gate starts its source)."""

    @abstractmethod
    async def close(self) -> None:
        """Stop every source this gate started."""


class TokenGate(Gate):
    """One secret per run; whoever holds it acts as the dashboard's owner."""

    mode: AuthMode = "token"

    def __init__(self, source: Source, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(32)
        digest = hashlib.sha256(self.token.encode()).hexdigest()[:12]
        self.cookie = f"taas-dashboard-{digest}"
        self.viewer = Viewer(key="owner", source=source)

    def entry(self, url: str) -> str:
        """`url` with the token: what to print (the only place the token is shown)."""
        return f"{url}?token={self.token}"

    def _matches(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())

    async def admit(self, request: web.Request) -> Viewer | web.StreamResponse:
        if self._matches(request.query.get("token", "")):
            response = web.Response(status=303, headers={"Location": request.path or "/"})
            _cookie(response, self.cookie, self.token, request.secure)
            return response
        if self._matches(bearer(request)) or self._matches(request.cookies.get(self.cookie, "")):
            self.viewer.last_seen = time.monotonic()
            return self.viewer
        raise Refusal(
            401,
            "this dashboard needs its token: open the URL that `taas dashboard` printed (it ends "
            "in ?token=...), or send Authorization: Bearer TOKEN",
        )

    async def start(self) -> None:
        await self.viewer.source.start()

    async def close(self) -> None:
        await self.viewer.source.close()


#: (bearer token) -> (status, user name, a source acting with that token, not yet started).
SourceFactory = Callable[[str], Awaitable[tuple[int, str, Source | None]]]


class ViewerGate(Gate):
    """Each viewer signs in with their own Kubernetes token; the dashboard acts as them."""

    mode: AuthMode = "kubernetes"
    public = ("/", "/static/*", "/api/session")

    def __init__(self, make_source: SourceFactory) -> None:
        self.make_source = make_source
        self.by_token: dict[str, Viewer] = {}  # sha256 of the token -> viewer
        self.sessions: dict[str, str] = {}  # session id -> sha256 of the token
        self.lock = asyncio.Lock()

    async def start(self) -> None:
        """Nothing to start: each viewer's source starts at their first sign-in."""

    async def admit(self, request: web.Request) -> Viewer | web.StreamResponse:
        token = bearer(request)
        if token:
            return await self.sign_in(token)
        session = request.cookies.get(SESSION_COOKIE, "")
        viewer = self.by_token.get(self.sessions.get(session, ""))
        if viewer is None:
            raise Refusal(
                401,
                "sign in with your Kubernetes token (kubectl create token ..., or your OIDC "
                "id-token): the dashboard shows and does what your own RBAC allows",
            )
        viewer.last_seen = time.monotonic()
        return viewer

    async def sign_in(self, token: str) -> Viewer:
        """The viewer for `token`, asking the apiserver who it is on first use."""
        if len(token.encode()) > MAX_TOKEN_BYTES or not token.isprintable():
            raise Refusal(401, "that is not a Kubernetes bearer token")
        digest = hashlib.sha256(token.encode()).hexdigest()
        async with self.lock:
            viewer = self.by_token.get(digest)
            if viewer is not None:
                viewer.last_seen = time.monotonic()
                return viewer
            await self._forget_idle()
            if len(self.by_token) >= MAX_VIEWERS:
                raise Refusal(
                    429,
                    f"{MAX_VIEWERS} viewers are signed in already; try again when one has left "
                    f"(viewers idle for {int(IDLE_SECONDS / 60)} min are signed out)",
                )
            status, name, source = await self.make_source(token)
            if status == 401 or source is None:
                raise Refusal(401, "the apiserver does not accept this token (401): get a new one")
            if status != 201:
                raise Refusal(503, f"the apiserver could not say who this token is (HTTP {status})")
            viewer = Viewer(key=f"viewer:{digest[:16]}", source=source, name=name)
            await source.start()
            self.by_token[digest] = viewer
            return viewer

    async def new_session(self, token: str) -> tuple[Viewer, str]:
        """Sign in from the page's form: the viewer and a session id for the cookie."""
        viewer = await self.sign_in(token)
        session = secrets.token_urlsafe(32)
        self.sessions[session] = hashlib.sha256(token.encode()).hexdigest()
        return viewer, session

    def end_session(self, session: str) -> None:
        self.sessions.pop(session, None)

    async def _forget_idle(self) -> None:
        now = time.monotonic()
        for digest, viewer in list(self.by_token.items()):
            if viewer.streams == 0 and now - viewer.last_seen > IDLE_SECONDS:
                del self.by_token[digest]
                for session in [s for s, d in self.sessions.items() if d == digest]:
                    del self.sessions[session]
                await viewer.source.close()

    async def close(self) -> None:
        viewers, self.by_token = list(self.by_token.values()), {}
        self.sessions.clear()
        await asyncio.gather(*(v.source.close() for v in viewers), return_exceptions=True)


def session_cookie(response: web.StreamResponse, session: str, secure: bool) -> None:
    """Set (or with "" clear) the sign-in session's cookie."""
    if session:
        _cookie(response, SESSION_COOKIE, session, secure)
    else:
        response.del_cookie(SESSION_COOKIE, path="/")
