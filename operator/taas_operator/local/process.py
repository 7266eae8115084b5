"""Start and stop replica processes so that none outlives the runner.

    spawn(launch: Launch) -> subprocess.Popen[bytes]
    signal_group(proc, sig) -> None

Every replica starts in its own session and process group (`start_new_session`), so a Ctrl-C
at the terminal reaches only the runner, which then stops the replicas itself, and one
`killpg` reaches a replica's own children too (as a container's PID namespace would).

Dying with the runner: the process is started through a tiny exec helper that sets
`PR_SET_PDEATHSIG(SIGKILL)` and then `exec`s the real command, so the kernel kills the replica
even when the runner is SIGKILLed. (A helper rather than `preexec_fn`, which is unsafe while the
runner's log threads run.) The helper checks its parent is still the runner after setting the
signal, closing the race where the runner dies first. Limits: the death signal is per process:
a replica's own children die with the replica only if it stops them. Linux only; elsewhere the
helper just execs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

from taas_operator.local.container import Launch

PR_SET_PDEATHSIG = 1

_HELPER = """
import os, sys
parent = int(sys.argv[1])
if sys.platform.startswith("linux"):
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(137)
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    sys.stderr.write("taas: cannot start %s: %s\\n" % (sys.argv[2], exc.strerror))
    os._exit(127)
"""


def spawn(launch: Launch) -> subprocess.Popen[bytes]:
    """Start `launch` in a new process group; stdout and stderr merged into one pipe."""
    argv = [sys.executable, "-E", "-S", "-c", _HELPER, str(os.getpid()), *launch.argv]
    return subprocess.Popen(
        argv,
        env=launch.env,
        cwd=launch.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        close_fds=True,
    )


def signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Send `sig` to the replica's process group (its pid), ignoring a group already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
