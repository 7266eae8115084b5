"""The chief publishes its training progress, for the operator and ``taas run`` to show.

    log_scalar(name, value, step=None)       # any scalar the user wants seen (last 5 kept)
    Publisher.from_settings(task, settings, is_chief) -> Publisher | None
    publisher.update(document)               # the loop hands over each new state
    publisher.close()                        # the last state written; the server keeps serving
    publisher.stop()                         # stop serving (tests, benchmarks)

What is published: one JSON document (the operator's ``taas_operator.api.progress_report``
reads it; this package never imports the operator, so the names are spelled here too and a test
sends a document through both)::

    {"version": 1, "task": "worker:0", "time": 1764000000.5, "globalStep": 410,
     "maxSteps": 1000, "loss": 0.3124, "examplesPerSecond": 2450.1, "etaSeconds": 24.0,
     "scalars": {"accuracy": [{"step": 400, "value": 0.91}, {"step": 410, "value": 0.92}]}}

Where, only on the chief (the other tasks' progress is not the job's):

- ``progress_port`` (``TAAS_PROGRESS_PORT``): an HTTP server on a daemon thread answers
  ``GET /progress`` with the latest document. Default: port 2223 when running in a Kubernetes
  pod (``KUBERNETES_SERVICE_HOST`` is set; the operator reads it there, see
  ``taas_operator.controller.reconcile.progress_poller`` for why it pulls), off elsewhere; 0
  turns it off. A port already taken is a note, never a failure.
- ``progress_file`` (``TAAS_PROGRESS_FILE``, set by ``taas run``, whose replicas live in a
  private network namespace the runner cannot connect into): the same document, rewritten
  atomically (temporary file + rename) at most once a second and at the end.
- the container's termination message (``/dev/termination-log`` in a pod, the kubelet's
  ``terminationMessagePath``; ``TAAS_TERMINATION_MESSAGE_PATH`` names another): the same
  document, cut to the kubelet's 4 KiB (older scalar points dropped first), rewritten at most
  once a second and at the end, so when the chief exits, however it exits, the pod's status
  keeps where it stopped and the operator folds it into ``status.progress`` with no server
  left to ask.

The loop (``taas.core.loop``) builds the documents from the same numbers as the progress lines
(``taas.core.progress_log``), so TF1 and TF2 engines publish alike. A program that does not use the
library publishes nothing. Nothing here imports TensorFlow; nothing here can fail training.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
from collections import deque
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from taas.core.settings import TrainerSettings

#: The same names as taas_operator.api.constants (the trainer must not import the operator).
DEFAULT_PROGRESS_PORT = 2223
PROGRESS_PATH = "/progress"
VERSION = 1
MAX_POINTS = 5
FILE_EVERY_SECS = 1.0
#: The kubelet keeps at most this much of a termination message.
TERMINATION_BYTES = 4096
POD_TERMINATION_LOG = "/dev/termination-log"


class ScalarLog:
    """The last ``MAX_POINTS`` values of each scalar the user logged, with their steps."""

    def __init__(self) -> None:
        self._points: dict[str, deque[tuple[int | None, float]]] = {}
        self._lock = threading.Lock()
        self.step = 0  # the global step the loop last saw

    def stamp(self, step: int) -> None:
        """The loop's step ended at global step ``step``: values logged during it without a
        step of their own get that one (the step they describe)."""
        with self._lock:
            self.step = step
            for name, points in self._points.items():
                if any(s is None for s, _ in points):
                    self._points[name] = deque(
                        ((step if s is None else s, v) for s, v in points), maxlen=MAX_POINTS
                    )

    def log(self, name: str, value: float, step: int | None = None) -> None:
        """Keep one value (see :func:`log_scalar`)."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"log_scalar: name must be a non-empty string, got {name!r}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise TypeError(
                f"log_scalar({name!r}, ...): value must be a number, got {value!r}"
            ) from None
        if not math.isfinite(number):
            return  # JSON has no NaN; a non-finite loss stops training elsewhere anyway
        with self._lock:
            points = self._points.setdefault(name, deque(maxlen=MAX_POINTS))
            points.append((None if step is None else int(step), number))

    def recent(self) -> dict[str, list[dict[str, float]]]:
        """Every scalar's kept values, oldest first, in the order scalars were first logged."""
        with self._lock:
            return {
                name: [
                    {"step": self.step if step is None else step, "value": value}
                    for step, value in points
                ]
                for name, points in self._points.items()
            }

    def clear(self) -> None:
        """Forget every value (tests)."""
        with self._lock:
            self._points.clear()


SCALARS = ScalarLog()


def log_scalar(name: str, value: float, step: int | None = None) -> None:
    """Publish a scalar (accuracy, learning rate, ...) with the chief's progress.

    The last five values of each name are kept, each with its global step (unless ``step`` is
    given: the global step the ``train`` call logging it ended at); ``kubectl get tfjob NAME
    -o yaml`` shows them under ``status.progress.scalars``. Only the chief's values are
    published, with its progress documents (values logged after the loop are not). NaN and
    infinite values are skipped; a name that is not a string or a value that is not a number
    raises TypeError.
    """
    SCALARS.log(name, value, step)


def document(
    task: str,
    global_step: int,
    max_steps: int,
    loss: float | None,
    examples_per_second: float | None,
    eta_seconds: float | None,
    now: float | None = None,
) -> dict[str, Any]:
    """The published JSON object (numbers that are not finite left out)."""

    def finite(value: float | None) -> float | None:
        return value if value is not None and math.isfinite(value) else None

    return {
        "version": VERSION,
        "task": task,
        "time": time.time() if now is None else now,
        "globalStep": int(global_step),
        "maxSteps": int(max_steps),
        "loss": finite(loss),
        "examplesPerSecond": finite(examples_per_second),
        "etaSeconds": finite(eta_seconds),
        "scalars": SCALARS.recent(),
    }


def termination_message(doc: Mapping[str, Any]) -> bytes:
    """``doc`` as JSON of at most ``TERMINATION_BYTES``: the oldest scalar points go first,
    then whole scalars, so the step, loss and rate always fit."""
    scalars = {name: list(points) for name, points in (doc.get("scalars") or {}).items()}
    while True:
        body = json.dumps({**doc, "scalars": scalars}, separators=(",", ":")).encode()
        if len(body) <= TERMINATION_BYTES or not scalars:
            return body[:TERMINATION_BYTES]
        longest = max(scalars, key=lambda name: len(scalars[name]))
        if len(scalars[longest]) > 1:
            scalars[longest].pop(0)
        else:
            del scalars[longest]


class _Handler(BaseHTTPRequestHandler):
    publisher: Publisher  # set on the subclass made per server

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != PROGRESS_PATH:
            self.send_error(404, f"only GET {PROGRESS_PATH} is served here")
            return
        body = self.publisher.body
        self.send_response(200 if body else 204)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the operator reads every 30 s; the training log is for training."""


class Publisher:
    """Holds the latest document; serves it over HTTP and/or writes it to a file."""

    def __init__(
        self, task: str, port: int = 0, path: str | None = None, termination: str | None = None
    ) -> None:
        self.task, self.path, self.termination = task, path, termination
        self.body = b""
        self._doc: dict[str, Any] = {}
        self._written = 0.0
        self._ended = 0.0
        self._server: ThreadingHTTPServer | None = None
        if port:
            self._serve(port)

    @classmethod
    def from_settings(
        cls,
        task: str,
        settings: TrainerSettings,
        is_chief: bool,
        environ: Mapping[str, str] | None = None,
    ) -> Publisher | None:
        """The chief's publisher as the settings ask (see the module), else None."""
        env = os.environ if environ is None else environ
        in_pod = bool(env.get("KUBERNETES_SERVICE_HOST"))
        port = settings.progress_port
        if port is None:
            port = DEFAULT_PROGRESS_PORT if in_pod else 0
        termination = env.get("TAAS_TERMINATION_MESSAGE_PATH") or (
            POD_TERMINATION_LOG if in_pod and os.path.exists(POD_TERMINATION_LOG) else None
        )
        if not is_chief or not (port or settings.progress_file or termination):
            return None
        return cls(task, port, settings.progress_file, termination)

    def _serve(self, port: int) -> None:
        handler = type("ProgressHandler", (_Handler,), {"publisher": self})
        try:
            # Every interface: the operator connects to the pod's IP.
            self._server = ThreadingHTTPServer(("", port), handler)
        except OSError as exc:
            print(
                f"[{self.task}] note: progress not served on port {port}: {exc.strerror}; "
                "training goes on (set TAAS_PROGRESS_PORT to a free port, 0 for none)",
                flush=True,
            )
            return
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, name="taas-progress", daemon=True
        ).start()

    @property
    def port(self) -> int | None:
        """The port served on, when serving."""
        return int(self._server.server_address[1]) if self._server else None

    def update(self, doc: dict[str, Any], final: bool = False) -> None:
        """Publish ``doc``: served from now on, written to the file when a second has passed
        since the last write (or ``final``)."""
        self.body = json.dumps(doc, separators=(",", ":")).encode()
        self._doc = doc
        if self.path and (final or time.monotonic() - self._written >= FILE_EVERY_SECS):
            self._write()
        if self.termination and (final or time.monotonic() - self._ended >= FILE_EVERY_SECS):
            self._end_message()

    def _end_message(self) -> None:
        """The document as the container's termination message (at most 4 KiB)."""
        assert self.termination is not None
        body = termination_message(self._doc)
        try:
            with open(self.termination, "wb") as handle:
                handle.write(body)
        except OSError as exc:
            print(
                f"[{self.task}] note: cannot write the termination message to "
                f"{self.termination}: {exc.strerror}",
                flush=True,
            )
            self.termination = None  # say it once
        self._ended = time.monotonic()

    def _write(self) -> None:
        assert self.path is not None
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            with open(temporary, "wb") as handle:
                handle.write(self.body)
            os.replace(temporary, self.path)
        except OSError as exc:
            print(
                f"[{self.task}] note: cannot write progress to {self.path}: {exc.strerror}",
                flush=True,
            )
            self.path = None  # say it once
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        self._written = time.monotonic()

    def close(self) -> None:
        """Write the last document. The server keeps answering until the process exits, so
        the last state can still be read while ``after_train`` runs."""
        if self.path and self.body:
            self._write()
        if self.termination and self._doc:
            self._end_message()

    def stop(self) -> None:
        """Stop serving (a test or benchmark hosting many publishers; a trainer need not)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
