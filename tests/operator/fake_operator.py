"""The operator's reconcile logic on the in-memory apiserver (`tests.harness.fakeapi`), in this
process: the fast tier of the operator tests.

    store = Store()
    admin = FakeApi(store)                        # `Api`'s test vocabulary, on the store
    operator = InProcessOperator(store, ["--namespace=ns", "--log-level", "DEBUG"]).start()
    operator.log(); operator.alive(); operator.stop()   # as `OperatorProcess`

What runs: the operator's `Controller` (its informers, caches, expectations, work queue, passes,
status writes, events), built from the same flags as `taas operator`, with its `KubeClient`
talking to a `FakeTransport` instead of aiohttp. What does not: kopf (login, probes, peering,
signal handling: the Controller is started and closed as kopf's start-up and clean-up
handlers do), the /metrics server, HTTP. Tests of those, and of what the real apiserver
decides (CRD validation and defaulting, RBAC, admission, watch timing), stay on the real one.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import logging
import threading
from typing import Any
from urllib.parse import parse_qsl

import pytest

from taas_operator.apiserver.transport import Endpoint
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller.controller import Controller
from taas_operator.controller.flags import add_arguments, settings_from_args
from taas_operator.controller.seen import ADOPTION
from tests.harness.fakeapi import FakeTransport, Store
from tests.harness.operator_run import Api, ApiStatusError

LOG_FORMAT = "%(asctime)s %(levelname)s [%(name)s] %(message)s"
#: Held while the in-process operators' handlers and the package's log level change.
_LEVELS = threading.Lock()
_BEFORE = [logging.NOTSET]  # the package's level before the first of them started


class FakeApi(Api):
    """`Api` (the admin's blocking JSON calls) answered by the store."""

    def __init__(self, store: Store) -> None:  # no kubeconfig, no TLS
        self.store = store

    def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        path, _, raw = path.partition("?")
        status, data = self.store.handle(method, path, dict(parse_qsl(raw)), body, content_type)
        if status >= 300:
            raise ApiStatusError(status, data if isinstance(data, str) else json.dumps(data))
        return data


def fake_kube(store: Store, concurrency: int) -> KubeClient:
    """The operator's client with the fake transport in place of its aiohttp one."""
    endpoint = Endpoint("http://fake-apiserver.invalid")
    return KubeClient(endpoint, concurrency, transport=FakeTransport(store))  # type: ignore[arg-type]


class _ThreadLog(logging.Handler):
    """The records logged on one thread (the operator's loop), formatted as the process logs."""

    def __init__(self, thread: int, level: str) -> None:
        super().__init__(level)
        self.thread, self.lines = thread, io.StringIO()
        self.setFormatter(logging.Formatter(LOG_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.lines.write(self.format(record) + "\n")


class InProcessOperator:
    """One operator (`taas operator FLAGS`) on the store, on an event loop in its own thread."""

    def __init__(self, store: Store, flags: list[str]) -> None:
        parser = add_arguments(argparse.ArgumentParser(prog="taas operator"))
        self.settings = settings_from_args(parser.parse_args(flags))
        self.store = store
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._clean = True
        self._handler: _ThreadLog | None = None
        self._started = threading.Event()
        self.error: BaseException | None = None

    def start(self) -> InProcessOperator:
        self._thread = threading.Thread(target=self._run, name="operator", daemon=True)
        self._thread.start()
        if not self._started.wait(30):
            raise AssertionError("the in-process operator did not start within 30 s")
        if self.error is not None:
            raise AssertionError(f"the in-process operator failed: {self.error!r}")
        return self

    def _run(self) -> None:
        self._handler = _ThreadLog(threading.get_ident(), self.settings.log_level)
        package = logging.getLogger("taas_operator")
        with _LEVELS:
            if not any(isinstance(h, _ThreadLog) for h in package.handlers):
                _BEFORE[:] = [package.level]
            package.addHandler(self._handler)
            package.setLevel(min(h.level for h in package.handlers if isinstance(h, _ThreadLog)))
        try:
            asyncio.run(self._main())
        except BaseException as err:  # shown by alive() and the next start()/stop()
            self.error = err
        finally:
            with _LEVELS:  # the level the operators still running need, else as it was
                package.removeHandler(self._handler)
                levels = [h.level for h in package.handlers if isinstance(h, _ThreadLog)]
                package.setLevel(min(levels) if levels else _BEFORE[0])
            self._started.set()

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        # a new operator process: pods made before its first pass are trusted (`seen.ADOPTION`;
        # the key stays: operators of this process running at once sign alike)
        ADOPTION.since = None
        ADOPTION.before.clear()
        controller = Controller(self.settings, fake_kube(self.store, self.settings.concurrency))
        await controller.start()  # kopf's start-up handler
        self._started.set()
        await self._stop.wait()
        if self._clean:
            await controller.close()  # kopf's clean-up handler

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def log(self) -> str:
        return self._handler.lines.getvalue() if self._handler is not None else ""

    def kill(self, clean: bool = False) -> None:
        """Stop the loop; without `clean`, as SIGKILL: no clean-up, the tasks just cancelled."""
        self._clean = clean
        if self._loop is not None and self._stop is not None and self.alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(30)
            assert not self._thread.is_alive(), "the in-process operator did not stop in 30 s"

    def stop(self) -> None:
        self.kill(clean=True)


class FakeCluster:
    """An in-memory apiserver, its admin, and the operators started on it (`start_operator`'s
    vocabulary: namespaces, then the flags)."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store or Store()
        self.admin = FakeApi(self.store)
        self.operators: list[InProcessOperator] = []

    def start_operator(self, *namespaces: str, args: tuple[str, ...] = ()) -> InProcessOperator:
        flags = [f"--namespace={ns}" for ns in namespaces] or ["--all-namespaces"]
        operator = InProcessOperator(self.store, [*flags, *args]).start()
        self.operators.append(operator)
        return operator

    def stop(self) -> None:
        for operator in self.operators:
            operator.stop()


def module_fixtures() -> tuple[Any, Any]:
    """A module's `admin` and `start_operator` fixtures on the in-memory apiserver (its
    `module_fake_cluster`), in place of the real ones of tests/operator/conftest.py:

        admin, start_operator = module_fixtures()
    """

    @pytest.fixture(scope="module")
    def admin(module_fake_cluster: FakeCluster) -> Api:
        """This module's admin: on the in-memory apiserver."""
        return module_fake_cluster.admin

    @pytest.fixture(scope="module")
    def start_operator(module_fake_cluster: FakeCluster) -> Any:
        """This module's operators: in-process, on the in-memory apiserver."""
        return module_fake_cluster.start_operator

    return admin, start_operator
