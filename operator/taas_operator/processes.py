"""Start and stop child processes so that none outlives its parent: the one helper the project
uses for it (`taas run`'s replicas, the control plane's etcd and kube-apiserver, the test and
benchmark harnesses).

    spawn(argv, env=..., cwd=..., death_signal=SIGKILL, stdout=PIPE, namespaces=())
        -> subprocess.Popen[bytes]
    signal_group(proc, sig)                          # the whole group, ignoring one already gone
    stop(proc, sig=SIGTERM, grace=10.0) -> int       # sig, wait `grace`, then SIGKILL; exit code
    free_ports(count) -> list[int]                   # distinct free TCP ports on 127.0.0.1

Every child starts in its own session and process group (`start_new_session`), so a Ctrl-C at
the terminal reaches only the parent, which stops its children itself, and one `killpg` reaches a
child's own children too (as a container's PID namespace would).

Dying with the parent: the child is started through a tiny exec helper (`python -E -S -c`) that
sets `PR_SET_PDEATHSIG(death_signal)` and then `exec`s the real command, so the kernel signals
the child even when the parent is SIGKILLed. The helper checks that its parent is still the one
that started it after setting the signal, closing the race where the parent dies first. It is a
helper rather than `preexec_fn` because `preexec_fn` is unsafe in a process with threads (the
runner's log readers, pytest's), which may hold locks at fork time. The death signal is the
caller's choice: SIGKILL for replicas (nothing to save), SIGTERM for etcd and kube-apiserver so
they shut down cleanly. Limits: the death signal is per process (a child's own children die with
it only if it stops them); Linux only, elsewhere the helper just execs.

Namespaces: `namespaces` are open file descriptors of Linux namespaces (/proc/PID/ns/...), such
as a `local.netns.PrivateNetwork`'s; the helper `setns()`s into each, in order (a user namespace
before the network namespace it owns), closes them, and only then sets the death signal (entering
a user namespace changes credentials, which may clear it) and execs. A child that cannot enter
them exits 127 with one line on stderr, so it never runs outside the namespace it was meant for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import IO

LOCAL_IP = "127.0.0.1"

_HELPER = """
import os, sys
parent, death_signal = int(sys.argv[1]), int(sys.argv[2])
namespaces = [int(fd) for fd in sys.argv[3].split(",") if fd]
if sys.platform.startswith("linux"):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for fd in namespaces:
        if libc.setns(fd, 0) != 0:
            sys.stderr.write("taas: cannot enter the job's namespace: %s\\n"
                             % os.strerror(ctypes.get_errno()))
            os._exit(127)
        os.close(fd)
    libc.prctl(1, death_signal, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(128 + death_signal)
elif namespaces:
    sys.stderr.write("taas: namespaces need Linux\\n")
    os._exit(127)
try:
    os.execvp(sys.argv[4], sys.argv[4:])
except OSError as exc:
    sys.stderr.write("taas: cannot start %s: %s\\n" % (sys.argv[4], exc.strerror))
    os._exit(127)
"""

Output = int | IO[bytes] | IO[str] | None


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    death_signal: signal.Signals = signal.SIGKILL,
    stdout: Output = subprocess.PIPE,
    stderr: Output = subprocess.STDOUT,
    namespaces: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """Start `argv` in a new process group that receives `death_signal` when this process dies,
    inside the `namespaces` given (file descriptors, entered in order; none: this process's).

    Output goes to `stdout` (a pipe by default, stderr merged into it); stdin is /dev/null.
    A command that cannot be started exits 127 with one line on stderr.
    """
    fds = ",".join(str(fd) for fd in namespaces)
    wrapped = [sys.executable, "-E", "-S", "-c", _HELPER, str(os.getpid()), str(int(death_signal))]
    return subprocess.Popen(
        [*wrapped, fds, *argv],
        env=dict(env) if env is not None else None,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
        close_fds=True,
        pass_fds=tuple(namespaces),
    )


def signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Send `sig` to the child's process group (its pid), ignoring a group already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def stop(
    proc: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGTERM, grace: float = 10.0
) -> int:
    """Signal the child's group with `sig`, wait up to `grace` seconds, then SIGKILL the group;
    return the exit code. What is left of the group is killed even when the child has already
    exited, as a container's leftovers would be."""
    if proc.poll() is None:
        signal_group(proc, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    signal_group(proc, signal.SIGKILL)
    return proc.wait()


def free_ports(count: int, host: str = LOCAL_IP) -> list[int]:
    """`count` distinct TCP ports on `host` that nothing listens on (bound together, then
    released; a port may still be taken before the caller binds it, so callers retry)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for sock in sockets:
            sock.close()
