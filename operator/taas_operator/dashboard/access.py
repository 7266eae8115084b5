"""Who may use the dashboard, and as whom it then acts (`taas dashboard --auth token|kubernetes`).

`token` (the default, as Jupyter and TensorBoard do it): a random token made for each run and
printed once, in the URL (`http://127.0.0.1:8765/?token=...`), checked by `runtoken.RunToken`
(shared with `taas tensorboard`'s proxy): opening that URL sets a cookie holding a random
session id (never the token; named after the port) and redirects to the page without the
token; scripts send `Authorization: Bearer TOKEN`. The dashboard then acts with its
kubeconfig's identity, its owner's. Without the token nothing answers but a 401 saying where
the token is, the page itself included.

`kubernetes` (in a cluster, the chart's): each viewer brings their own Kubernetes bearer token,
passed by an authenticating front proxy as `Authorization: Bearer ...` (oauth2-proxy and the like)
or pasted once on the page's sign-in form (`kubectl create token ...`, an OIDC id-token). The
apiserver says who it is (SelfSubjectReview: user name and uid); every read and action for that
viewer is made with that token, so the apiserver's RBAC decides what each viewer sees and does.
Everything the dashboard holds for viewers is kept per person, keyed by that identity, not per
token: one viewer (and one source acting as them) per identity, and a sign-in with a new token
for an identity already signed in replaces the earlier token (its sessions end, its streams stop
within a heartbeat), at most `RENEWALS_PER_VIEWER` times in `RENEWAL_SECONDS`. Identities a
tenant can mint (ServiceAccounts) share one group per namespace (`shares.group_of`). Bounds:
`MAX_VIEWERS` identities at once, at most `VIEWERS_PER_GROUP` of one group (half that once half
the slots are taken: `shares.refusal_reason`), each forgotten after `IDLE_SECONDS` without a
request; `SESSIONS_PER_VIEWER` browser sessions per identity (the oldest ended first), each ended
after `SESSION_IDLE_SECONDS` unused or `SESSION_MAX_SECONDS` after it began.
Refused before the apiserver is asked: an empty, oversized or unprintable token; a token it
refused in the last `REFUSED_SECONDS` (per credential fingerprint: kept as sha256, at most
`MAX_REFUSED`); and, once `FAILED_SIGN_INS` sign-ins failed in the last `FAILURE_SECONDS` over
all clients, a token not signed in already (429). Never a client address: behind an Ingress or a
port-forward every viewer shares one, and one person's bad tokens would lock out everyone.
A token already signed in, and every session, goes on whatever others fail.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from abc import ABC, abstractmethod
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from aiohttp import web

from taas_operator.dashboard.shares import group_of, refusal_reason
from taas_operator.dashboard.source import Source
from taas_operator.runtoken import RunToken, Sessions, bearer, cookie_name

AuthMode = Literal["token", "kubernetes"]
MAX_VIEWERS = 64
#: Viewer slots one identity group holds at most (`shares`): ServiceAccounts of one namespace.
VIEWERS_PER_GROUP = 8
IDLE_SECONDS = 3600.0
SESSIONS_PER_VIEWER = 4
SESSION_IDLE_SECONDS = IDLE_SECONDS
SESSION_MAX_SECONDS = 12 * 3600.0
#: Failed sign-ins (tokens the apiserver refused) in `FAILURE_SECONDS` over all clients, past
#: which a token never seen before is refused without asking.
FAILED_SIGN_INS, FAILURE_SECONDS = 120, 60.0
REFUSED_SECONDS, MAX_REFUSED = 60.0, 4096
RENEWALS_PER_VIEWER, RENEWAL_SECONDS = 10, 60.0
#: A bearer token longer than this is refused before anything is asked of the apiserver.
MAX_TOKEN_BYTES = 16 * 1024
COOKIE = "dashboard"


class Refusal(Exception):
    """A request that may not go on: the status and the message the client gets."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass
class Viewer:
    """Someone let in: `key` tells viewers apart (one per identity: stream caps), `source` is
    what they see (acting with their current token, sha256 `token`)."""

    key: str
    source: Source
    name: str = ""
    token: str = ""
    #: Whose share this viewer draws on (`shares.group_of`); empty: the viewer's own (`key`).
    group: str = ""
    last_seen: float = field(default_factory=time.monotonic)
    streams: int = 0

    def __post_init__(self) -> None:
        self.group = self.group or self.key


def session_cookie(request: web.Request) -> str:
    """The name of this server's session cookie (`taas-dashboard-<port>`)."""
    return cookie_name(COOKIE, request)


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
        self.run = RunToken(COOKIE, token)
        self.viewer = Viewer(key="owner", source=source)

    @property
    def token(self) -> str:
        return self.run.token

    def entry(self, url: str) -> str:
        """`url` with the token: what to print (the only place the token is shown)."""
        return self.run.entry(url)

    async def admit(self, request: web.Request) -> Viewer | web.StreamResponse:
        admitted = self.run.admit(request)
        if isinstance(admitted, web.Response):
            return admitted
        if admitted:
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


#: (bearer token) -> (SelfSubjectReview status, user name, user uid, a source acting with that
#: token, not yet started; the factory closes it itself when the status is not 201).
SourceFactory = Callable[[str], Awaitable[tuple[int, str, str, Source | None]]]


class Attempts:
    """What each key (a person; "" for all clients together) tried in the last `window`
    seconds: at most `limit` times each, at most `keys` keys remembered (the oldest
    forgotten)."""

    def __init__(self, limit: int, window: float, keys: int) -> None:
        self.limit, self.window, self.keys = limit, window, keys
        self.seen: OrderedDict[str, deque[float]] = OrderedDict()

    def wait(self, key: str) -> float:
        """Seconds `key` must wait before trying again (0: it may try now)."""
        times = self.seen.get(key)
        if times is None:
            return 0.0
        now = time.monotonic()
        while times and now - times[0] > self.window:
            times.popleft()
        if not times:
            del self.seen[key]
            return 0.0
        return self.window - (now - times[0]) if len(times) >= self.limit else 0.0

    def add(self, key: str) -> None:
        times = self.seen.pop(key, None) or deque(maxlen=self.limit)
        times.append(time.monotonic())
        self.seen[key] = times
        while len(self.seen) > self.keys:
            self.seen.popitem(last=False)


class RecentlyRefused:
    """sha256 digests of tokens the apiserver refused, each for `seconds` (at most `limit`)."""

    def __init__(self, limit: int, seconds: float) -> None:
        self.limit, self.seconds = limit, seconds
        self.until: OrderedDict[str, float] = OrderedDict()

    def __contains__(self, digest: str) -> bool:
        until = self.until.get(digest)
        if until is not None and until < time.monotonic():
            del self.until[digest]
            return False
        return until is not None

    def add(self, digest: str) -> None:
        self.until.pop(digest, None)
        self.until[digest] = time.monotonic() + self.seconds
        while len(self.until) > self.limit:
            self.until.popitem(last=False)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ViewerGate(Gate):
    """Each viewer signs in with their own Kubernetes token; the dashboard acts as them."""

    mode: AuthMode = "kubernetes"
    public = ("/", "/static/*", "/api/session")

    def __init__(self, make_source: SourceFactory) -> None:
        self.make_source = make_source
        self.viewers: dict[str, Viewer] = {}  # identity (user name and uid) -> viewer
        self.tokens: dict[str, str] = {}  # sha256 of each viewer's current token -> identity
        self.sessions: Sessions[str] = Sessions(  # session id -> sha256 of the token
            MAX_VIEWERS * SESSIONS_PER_VIEWER, SESSION_IDLE_SECONDS, SESSION_MAX_SECONDS
        )
        self.failures = Attempts(FAILED_SIGN_INS, FAILURE_SECONDS, 1)  # over all clients
        self.renewals = Attempts(RENEWALS_PER_VIEWER, RENEWAL_SECONDS, MAX_VIEWERS)
        self.refused = RecentlyRefused(MAX_REFUSED, REFUSED_SECONDS)
        self.lock = asyncio.Lock()

    async def start(self) -> None:
        """Nothing to start: each viewer's source starts at their first sign-in."""

    def _current(self, digest: str) -> Viewer | None:
        viewer = self.viewers.get(self.tokens.get(digest, ""))
        if viewer is not None:
            viewer.last_seen = time.monotonic()
        return viewer

    async def admit(self, request: web.Request) -> Viewer | web.StreamResponse:
        token = bearer(request)
        if token:
            return await self.sign_in(token)
        session = request.cookies.get(session_cookie(request), "")
        viewer = self._current(self.sessions.get(session) or "")
        if viewer is None:
            raise Refusal(
                401,
                "sign in with your Kubernetes token (kubectl create token ..., or your OIDC "
                "id-token): the dashboard shows and does what your own RBAC allows",
            )
        return viewer

    async def sign_in(self, token: str) -> Viewer:
        """The viewer for `token`, asking the apiserver who it is on first use (see the module
        for what is refused before that)."""
        if not token:
            raise Refusal(401, "the token is empty: paste your Kubernetes bearer token "
                          "(kubectl create token NAME, or your OIDC id-token)")  # fmt: skip
        if len(token.encode()) > MAX_TOKEN_BYTES or not token.isprintable():
            raise Refusal(401, "that is not a Kubernetes bearer token")
        digest = _digest(token)
        viewer = self._current(digest)
        if viewer is not None:
            return viewer
        self._throttle(digest)
        async with self.lock:  # one question to the apiserver at a time
            return self._current(digest) or await self._ask(token, digest)

    def _throttle(self, digest: str) -> None:
        """Refuse, without asking the apiserver, a token refused a moment ago (401: its
        fingerprint is remembered) and, past the ceiling of failed sign-ins over all clients,
        a token not signed in already (429)."""
        if digest in self.refused:
            raise Refusal(401, "the apiserver does not accept this token (401): get a new one")
        wait = self.failures.wait("")
        if wait > 0:
            raise Refusal(
                429,
                f"{FAILED_SIGN_INS} sign-ins with refused tokens reached the dashboard within "
                f"{FAILURE_SECONDS:.0f} s: new tokens are checked again in {wait:.0f} s "
                "(signed-in viewers are not affected)",
            )

    async def _ask(self, token: str, digest: str) -> Viewer:
        self._throttle(digest)  # again: others may have failed while this one waited
        await self._forget_idle()
        status, name, uid, source = await self.make_source(token)
        if status == 401:
            self.refused.add(digest)
            self.failures.add("")
            raise Refusal(401, "the apiserver does not accept this token (401): get a new one")
        if status != 201 or source is None:
            raise Refusal(503, f"the apiserver could not say who this token is (HTTP {status})")
        key, group = f"{name}\n{uid}", group_of(name)
        viewer = self.viewers.get(key)
        refusal = None if viewer is not None else self._no_slot(group)
        if refusal is not None:
            await source.close()
            raise refusal
        wait = self.renewals.wait(key) if viewer is not None else 0.0
        if wait > 0:
            await source.close()
            raise Refusal(
                429,
                f"{name} signed in with {RENEWALS_PER_VIEWER} new tokens within "
                f"{RENEWAL_SECONDS:.0f} s: keep using the latest (try again in {wait:.0f} s)",
            )
        if viewer is not None:
            self.renewals.add(key)
        await source.start()
        if viewer is None:
            viewer = Viewer(key=key, source=source, name=name, token=digest, group=group)
            self.viewers[key] = viewer
        else:  # the same person with a new token: it replaces the earlier one
            earlier = viewer.source
            self.tokens.pop(viewer.token, None)
            self.sessions.end_where(viewer.token)
            viewer.source, viewer.token = source, digest
            await earlier.close()
        self.tokens[digest] = key
        viewer.last_seen = time.monotonic()
        return viewer

    def _no_slot(self, group: str) -> Refusal | None:
        """Why a new identity of `group` gets no viewer slot now (None: it gets one)."""
        held = sum(1 for viewer in self.viewers.values() if viewer.group == group)
        why = refusal_reason(held, len(self.viewers), VIEWERS_PER_GROUP, MAX_VIEWERS)
        idle = f"viewers idle for {int(IDLE_SECONDS / 60)} min are signed out"
        if why == "full":
            return Refusal(
                429,
                f"{MAX_VIEWERS} people are signed in already; try again when one has left ({idle})",
            )
        if why is not None:
            most = VIEWERS_PER_GROUP if why == "group" else max(VIEWERS_PER_GROUP // 2, 1)
            busy = "" if why == "group" else f" while more than {MAX_VIEWERS // 2} are in"
            return Refusal(
                429,
                f"{held} identities of {group} are signed in, its share (at most {most}{busy}); "
                f"try again when one has left ({idle})",
            )
        return None

    async def new_session(self, token: str) -> tuple[Viewer, str]:
        """Sign in from the page's form: the viewer and a session id for the cookie (this
        person's oldest session ends when they hold `SESSIONS_PER_VIEWER` already)."""
        viewer = await self.sign_in(token)
        while self.sessions.count(viewer.token) >= SESSIONS_PER_VIEWER:
            self.sessions.end(self.sessions.oldest_of(viewer.token) or "")
        return viewer, self.sessions.begin(viewer.token)

    def end_session(self, session: str) -> None:
        self.sessions.end(session)

    async def _forget_idle(self) -> None:
        now = time.monotonic()
        self.sessions.expire()
        for key, viewer in list(self.viewers.items()):
            if viewer.streams == 0 and now - viewer.last_seen > IDLE_SECONDS:
                del self.viewers[key]
                self.tokens.pop(viewer.token, None)
                self.sessions.end_where(viewer.token)
                await viewer.source.close()

    async def close(self) -> None:
        viewers, self.viewers = list(self.viewers.values()), {}
        self.tokens.clear()
        self.sessions.clear()
        await asyncio.gather(*(v.source.close() for v in viewers), return_exceptions=True)


def replaced(viewer: Viewer, source: Source) -> bool:
    """Whether `viewer` acts with another source than `source` now (a newer token replaced
    it): a stream started on `source` ends."""
    return viewer.source is not source
