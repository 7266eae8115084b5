"""Stopping when asked: SIGTERM ends a trainer process soon, whatever it is doing.

    stopping.install()        # at the start of a task, before TensorFlow starts any thread
    stopping.finished(0)      # from now on a stop request is a clean end (a PS whose work is done)
    stopping.plain()          # drop a task's own SIGTERM handler (back to "end at once")
    stopping.checkpoint_first()  # SIGTERM: the task saves after its step (polls requested())
    stopping.needs(hosts)     # the task's checkpoint needs these peers ("host:port")
    stopping.serves(hosts)    # a serving task: these tasks ("host:port") may still need it
    stopping.requested()      # SIGTERM arrived (a peer failure after it is part of the stop)

Why not a plain handler: TensorFlow's servers block the main thread inside C++ (a PS waiting
on its queue, a collective op, `server.join()`), where Python's signal handlers never run, and a
container's first process (PID 1) ignores any signal it has no handler for, so a pod's TF
servers sat out the whole grace period. Here SIGTERM always has a handler (so PID 1 receives
it), and the C side of Python's signal handling, which runs in whatever thread the kernel picks,
writes the signal's number to a pipe (`signal.set_wakeup_fd`) that a daemon thread reads: it
learns of SIGTERM whatever the main thread is doing. The thread then ends the process with the
code of the moment: 143 (retryable: a pod stopped under it is recreated) until `finished(code)`
says otherwise. Before that:

- A task that set a handler of its own (the TensorFlow 2 engine's "checkpoint after this step,
  then exit 143", TensorFlow's preemption handler) gets up to `GRACE_SECONDS` to end by itself.
  When its checkpoint needs peers (a ParameterServerStrategy coordinator saves what its PS tasks
  hold: `needs(ps_hosts)`) and one stops answering, it ends at once: no checkpoint can be saved.
- A serving task (a ParameterServerStrategy PS or worker: `serves([coordinator])`) stays while
  a task it serves still answers, up to `SERVE_GRACE_SECONDS`: deleting a TFJob sends SIGTERM to
  every pod at once, and the coordinator's last checkpoint reads the variables on the PS and
  finishes its step on the workers. It leaves as soon as the coordinator has gone.

Both waits are bounded by a timer that ends the process whatever the checks are doing. The peers
are checked at the addresses their names had before SIGTERM (resolved in the background while
the task runs): a deleted TFJob's headless services go with its pods, and a name that no longer
resolves says nothing about whether the process behind it still runs.

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
from collections.abc import Callable

#: How long a task that set a SIGTERM handler (the TensorFlow 2 engine: checkpoint first) may
#: take to end by itself; a task without one ends at once. Within Kubernetes' 5 s bound for a
#: deleted job's pods to go, with the serving tasks' grace just after it.
GRACE_SECONDS = 4.0
#: How long a serving task stays after SIGTERM while a task it serves still answers.
SERVE_GRACE_SECONDS = GRACE_SECONDS + 0.5
#: How often, during either wait, the peers are checked.
PEER_CHECK_SECONDS = 0.2
#: How often the peers' names are resolved again while the task runs (a recreated pod's new
#: address); until a name first resolves, every second.
RESOLVE_EVERY_SECONDS = 30.0
TERMINATED = 143
_state: dict[str, int | str] = {"code": TERMINATED, "task": "task"}
_requested = threading.Event()
_peers: list[str] = []
_served: list[str] = []
_addresses: dict[str, tuple[str, int]] = {}
_resolving = threading.Event()
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


def checkpoint_first() -> None:
    """From now on SIGTERM gives the task up to ``GRACE_SECONDS`` to save a checkpoint after
    the step it is in (it polls :func:`requested`) and end by itself. From the main thread."""
    signal.signal(signal.SIGTERM, _checkpoint_first)


def needs(hosts: list[str]) -> None:
    """The task's own SIGTERM handler needs these peers ("host:port") to checkpoint; when one
    stops answering during the grace time, the task ends at once."""
    _peers[:] = list(hosts)
    _resolve_in_background()


def serves(hosts: list[str]) -> None:
    """This task serves the tasks at ``hosts`` ("host:port"): on SIGTERM it stays while one of
    them still answers (up to ``SERVE_GRACE_SECONDS``), so that their last checkpoint can read
    what it holds."""
    _served[:] = list(hosts)
    _resolve_in_background()


def requested() -> bool:
    """Whether SIGTERM arrived: a task that fails after it (its peers stopped with it, as when
    the whole job is deleted) was stopped, and says so with 143."""
    return _requested.is_set()


def finished(code: int = 0) -> None:
    """A stop request from now on ends the task with `code` (a PS after training: 0)."""
    _state["code"] = code


def _no_wish(signum: int, frame: object) -> None:
    """The handler meaning "no handler of the task's own": the thread below does the work."""


def _checkpoint_first(signum: int, frame: object) -> None:
    """The handler meaning "the task checkpoints first": it polls `requested()`."""


def _wait_for_sigterm(read_end: int) -> None:
    while signal.SIGTERM not in os.read(read_end, 512):
        pass  # another signal (SIGINT...): its own handler deals with it
    _requested.set()
    if signal.getsignal(signal.SIGTERM) is not _no_wish:
        _bounded(GRACE_SECONDS, _until_a_needed_peer_is_gone)  # its own handler: it exits
    elif _served and _state["code"] == TERMINATED:
        _bounded(SERVE_GRACE_SECONDS, _until_the_served_are_gone)
    _exit()


def _exit() -> None:
    code = int(str(_state["code"]))
    print(f"[{_state['task']}] stop requested (SIGTERM); exiting {code}", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _bounded(seconds: float, wait: Callable[[], None]) -> None:
    """Run ``wait()``, but end the process when ``seconds`` have passed whatever it is doing."""
    timer = threading.Timer(seconds, _exit)
    timer.daemon = True
    timer.start()
    wait()


def _until_a_needed_peer_is_gone() -> None:
    """Return when a peer the task's checkpoint needs is gone; the timer ends a longer wait."""
    host = _until_gone(list(_peers), every=False)[0]
    print(f"[{_state['task']}] {host} is gone: no checkpoint can be saved", flush=True)


def _until_the_served_are_gone() -> None:
    """Return when none of the served tasks answers any more."""
    _until_gone(list(_served), every=True)


def _until_gone(hosts: list[str], every: bool) -> list[str]:
    """Check ``hosts`` every ``PEER_CHECK_SECONDS`` until one of them (``every``: all) is gone,
    two failed connections in a row (refused, or no answer within the check's time); return
    those gone. With no hosts it waits for the caller's timer."""
    failures = dict.fromkeys(hosts, 0)
    while True:
        for host, count in failures.items():
            if count < 2:
                failures[host] = 0 if _answers(host) else count + 1
        gone = [host for host, count in failures.items() if count >= 2]
        if gone and (not every or len(gone) == len(failures)):
            return gone
        time.sleep(PEER_CHECK_SECONDS)


def _answers(host: str) -> bool:
    """Whether ``host`` accepts a connection, at the address its name last resolved to."""
    address = _addresses.get(host) or _resolve(host)
    if address is None:
        return False
    try:
        with socket.create_connection(address, timeout=PEER_CHECK_SECONDS * 2):
            return True
    except OSError:
        return False


def _resolve(host: str) -> tuple[str, int] | None:
    name, _, port = host.rpartition(":")
    try:
        found = socket.getaddrinfo(name, int(port), type=socket.SOCK_STREAM)
    except (OSError, ValueError):
        return None
    family_address = found[0][4] if found else None
    return (str(family_address[0]), int(family_address[1])) if family_address else None


def _resolve_in_background() -> None:
    """Keep ``_addresses`` current for every peer (one daemon thread per process)."""
    if _resolving.is_set():
        return
    _resolving.set()
    threading.Thread(target=_keep_resolving, name="taas-peers", daemon=True).start()


def _keep_resolving() -> None:
    while not _requested.is_set():
        unresolved = False
        for host in [*_peers, *_served]:
            address = _resolve(host)
            if address is not None:
                _addresses[host] = address
            unresolved = unresolved or host not in _addresses
        _requested.wait(1.0 if unresolved else RESOLVE_EVERY_SECONDS)
