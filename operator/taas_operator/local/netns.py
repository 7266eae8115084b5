"""A private network for one job's replicas under `taas run`: a Linux network namespace of its
own, with its own loopback, shared by every replica of the job and by no one else.

    network = PrivateNetwork.create()     # raises NetworkUnavailable(why) where it cannot be
    spawn(argv, namespaces=network.fds)   # taas_operator.processes: entered before exec
    network.kind                          # "network namespace" | "user + network namespace"
    network.close()                       # the namespace goes when its last replica exits

Why: TF_CONFIG says 127.0.0.1, but TensorFlow's gRPC servers listen on every interface and run
any graph sent to them, unauthenticated. Inside the job's namespace the only interface is its
own `lo`, so nothing outside the job (the host's 127.0.0.1, its other addresses, other jobs)
can connect to a replica, and the replicas still reach each other on 127.0.0.1. The other side
of it: replicas cannot reach the network either (no download in the training program).

How it is made: a short-lived child, started with `taas_operator.processes.spawn` (so it dies
with the runner), calls unshare(2) and brings its `lo` up (SIOCSIFFLAGS), then says "ready":
- as root (CAP_SYS_ADMIN): `unshare(CLONE_NEWNET)`, as `unshare --net` does;
- otherwise, or where root may not (a container without CAP_SYS_ADMIN):
  `unshare(CLONE_NEWUSER | CLONE_NEWNET)`, writing its own uid and gid as the only mappings
  (as `unshare --user --map-current-user --net` does). The replicas keep their uid and gid and
  gain nothing on the host: their capabilities in that user namespace end at exec (uid not 0).
  Root without capabilities may not map uid 0 into a user namespace (that needs CAP_SETFCAP),
  so its replicas run unmapped there (uid 65534 inside, still root's files outside).
The runner opens /proc/<child>/ns/user (when used) and /proc/<child>/ns/net and stops the child:
the open descriptors keep the namespaces alive, and each replica's exec helper setns()es into
them (see `taas_operator.processes`). Where neither works (user namespaces turned off:
user.max_user_namespaces=0, kernel.unprivileged_userns_clone=0, an AppArmor or seccomp policy;
not Linux), `NetworkUnavailable` says why and the runner warns and uses the host network.

Talking to a replica (e.g. training progress read from the chief): a Unix socket bound to a path
is not tied to a network namespace, so the runner and a replica can share one through a
directory both see (a per-job temporary directory passed in the replica's environment);
tests/local/test_local_private_network.py shows a replica reaching such a socket.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys

from taas_operator.processes import spawn, stop

READY_TIMEOUT = 10.0

_MAKE = """
import ctypes, fcntl, os, signal, socket, struct, sys
CLONE_NEWNET, CLONE_NEWUSER = 0x40000000, 0x10000000
libc = ctypes.CDLL(None, use_errno=True)
def fail(what):
    print("error: %s: %s" % (what, os.strerror(ctypes.get_errno())), flush=True)
    sys.exit(1)
uid, gid = os.geteuid(), os.getegid()
if sys.argv[1] == "user":
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        fail("cannot create a user namespace with a network namespace")
    def write(name, text):
        with open("/proc/self/" + name, "w") as f:
            f.write(text)
    try:
        write("setgroups", "deny")
        write("gid_map", "%d %d 1" % (gid, gid))
        try:
            write("uid_map", "%d %d 1" % (uid, uid))
        except PermissionError:
            if uid != 0:
                raise  # mapping host root needs CAP_SETFCAP: root without it stays unmapped
    except OSError as exc:
        print("error: cannot map uid %d in the user namespace: %s" % (uid, exc.strerror),
              flush=True)
        sys.exit(1)
elif libc.unshare(CLONE_NEWNET) != 0:
    fail("cannot create a network namespace")
try:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, ifreq))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))  # SIOCSIFFLAGS IFF_UP
except OSError as exc:
    print("error: cannot bring up the loopback interface: %s" % exc.strerror, flush=True)
    sys.exit(1)
print("ready", flush=True)
signal.pause()
"""


class NetworkUnavailable(Exception):
    """No private network namespace can be made here; the text says why."""


class PrivateNetwork:
    """Open descriptors of a private network namespace (and the user namespace owning it)."""

    def __init__(self, fds: tuple[int, ...], kind: str) -> None:
        self.fds, self.kind = fds, kind

    @classmethod
    def create(cls) -> PrivateNetwork:
        """A new namespace with `lo` up; NetworkUnavailable when none can be made."""
        if not sys.platform.startswith("linux"):
            raise NetworkUnavailable("network namespaces need Linux")
        attempts = ["net", "user"] if os.geteuid() == 0 else ["user"]
        reasons = []
        for attempt in attempts:
            try:
                return cls._make(attempt)
            except NetworkUnavailable as exc:
                reasons.append(str(exc))
        raise NetworkUnavailable("; ".join(reasons))

    @classmethod
    def _make(cls, attempt: str) -> PrivateNetwork:
        maker = spawn([sys.executable, "-E", "-S", "-c", _MAKE, attempt], stderr=None)
        try:
            answer = _first_line(maker)
            if answer != "ready":
                raise NetworkUnavailable(answer.removeprefix("error: ") or "no answer")
            kinds = ["user", "net"] if attempt == "user" else ["net"]
            fds: list[int] = []
            try:
                for kind in kinds:
                    fds.append(os.open(f"/proc/{maker.pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC))
            except OSError as exc:
                for fd in fds:
                    os.close(fd)
                raise NetworkUnavailable(f"cannot open the namespace: {exc.strerror}") from None
        finally:
            stop(maker, signal.SIGKILL, grace=0)
            if maker.stdout is not None:
                maker.stdout.close()
        kind = "user + network namespace" if attempt == "user" else "network namespace"
        return cls(tuple(fds), kind)

    def close(self) -> None:
        """Drop this process's hold on the namespaces (replicas inside keep them alive)."""
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = ()


def _first_line(proc: subprocess.Popen[bytes]) -> str:
    """The maker's first output line, or a reason when it says nothing in time."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT)
    if not ready:
        return f"error: no answer within {READY_TIMEOUT:.0f} s"
    return proc.stdout.readline().decode(errors="replace").strip()
