"""Stopping when asked: SIGTERM ends a trainer process at once, whatever it is doing.

    stopping.install()        # at the start of a task, before TensorFlow starts any thread
    stopping.finished(0)      # from now on a stop request is a clean end (a PS whose work is done)
    stopping.plain()          # drop a task's own SIGTERM handler (back to "end at once")
    stopping.needs(hosts)     # the task's checkpoint needs these peers ("host:port")
    stopping.requested()      # SIGTERM arrived (a peer failure after it is part of the stop)

Why not a plain handler: TensorFlow's servers block the main thread inside C++ (a PS waiting
on its queue, a collective op, `server.join()`), where Python's signal handlers never run, and a
container's first process (PID 1) ignores any signal it has no handler for, so a pod's TF
servers sat out the whole grace period. Here SIGTERM always has a handler (so PID 1 receives
it), and the C side of Python's signal handling, which runs in whatever thread the kernel picks,
writes the signal's number to a pipe (`signal.set_wakeup_fd`) that a daemon thread reads: it
learns of SIGTERM whatever the main thread is doing. If the task set a handler of its own (the
TensorFlow 2 engine's "checkpoint after this step, then exit 143", TensorFlow's preemption
handler), the task gets up to `GRACE_SECONDS` to end by itself (a step and a checkpoint);
otherwise, or after that, the thread ends the process with the code of the moment: 143
(retryable: a pod stopped under it is recreated) until `finished(code)` says otherwise. A task
whose checkpoint needs peers (a ParameterServerStrategy coordinator saves what its PS tasks
hold: `needs(ps_hosts)`) is not given that time when they are gone: when the whole job is
stopped (the TFJob deleted), its PS tasks end at once, no checkpoint can be saved, and the
thread ends the task as soon as a peer stops answering (`PEER_CHECK_SECONDS` apart), instead of
after `GRACE_SECONDS`.

Only one wakeup pipe exists per process: a program that sets its own (an asyncio loop with
signal handlers) takes it over. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

#: How long a task that set a SIGTERM handler (the TensorFlow 2 engine: checkpoint first) may
#: take to end by itself; a task without one ends at once.
GRACE_SECONDS = 10.0
#: How often, during that time, the peers a task's checkpoint needs are checked.
PEER_CHECK_SECONDS = 0.2
TERMINATED = 143
_state: dict[str, int | str] = {"code": TERMINATED, "task": "task"}
_requested = threading.Event()
_peers: list[str] = []
_installed = threading.Event()


def install(task: str = "task") -> None:
    """Take SIGTERM over for this process (once; from the main thread)."""
    _state["task"] = task
    if _installed.is_set() or threading.current_thread() is not threading.main_thread():
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    plain()
    threading.Thread(
        target=_wait_for_sigterm, args=(read_end,), name="taas-sigterm", daemon=True
    ).start()
    _installed.set()


def plain() -> None:
    """No task handler: SIGTERM ends the task at once (with a handler, not SIG_DFL, which a
    PID 1 would ignore). From the main thread."""
    signal.signal(signal.SIGTERM, _no_wish)


def needs(hosts: list[str]) -> None:
    """The task's own SIGTERM handler needs these peers ("host:port") to checkpoint; when one
    stops answering during the grace time, the task ends at once."""
    _peers[:] = list(hosts)


def requested() -> bool:
    """Whether SIGTERM arrived: a task that fails after it (its peers stopped with it, as when
    the whole job is deleted) was stopped, and says so with 143."""
    return _requested.is_set()


def finished(code: int = 0) -> None:
    """A stop request from now on ends the task with `code` (a PS after training: 0)."""
    _state["code"] = code


def _no_wish(signum: int, frame: object) -> None:
    """The handler meaning "no handler of the task's own": the thread below does the work."""


def _wait_for_sigterm(read_end: int) -> None:
    while signal.SIGTERM not in os.read(read_end, 512):
        pass  # another signal (SIGINT...): its own handler deals with it
    _requested.set()
    if signal.getsignal(signal.SIGTERM) is not _no_wish:
        _grace()  # the task's own handler: a checkpoint, then its own exit
    code = int(str(_state["code"]))
    print(f"[{_state['task']}] stop requested (SIGTERM); exiting {code}", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _grace() -> None:
    """Wait up to GRACE_SECONDS for the task to end by itself; less when a peer it needs is
    gone (two failed connections in a row: refused, or no answer within the check's time)."""
    deadline = time.monotonic() + GRACE_SECONDS
    failures: dict[str, int] = {}
    while time.monotonic() < deadline:
        for host in list(_peers):
            failures[host] = 0 if _answers(host) else failures.get(host, 0) + 1
            if failures[host] >= 2:
                print(f"[{_state['task']}] {host} is gone: no checkpoint can be saved", flush=True)
                return
        time.sleep(PEER_CHECK_SECONDS)


def _answers(host: str) -> bool:
    name, _, port = host.rpartition(":")
    try:
        with socket.create_connection((name, int(port)), timeout=PEER_CHECK_SECONDS * 2):
            return True
    except (OSError, ValueError):
        return False
