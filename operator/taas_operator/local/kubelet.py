"""A local stand-in for a kubelet: one `LocalPod` runs one pod's `tensorflow` container.

    LocalPod(manifest, uid, launch, on_line, namespaces=())
        # on_line(pod name, output line as bytes); namespaces: fds the process enters (netns)
        .start()  .poll(now) -> bool (state changed)  .delete(now)  .kill()
        .observed() -> ObservedPod  (what the planner reads)

Like a kubelet, it applies the pod's own restartPolicy (the planner wrote it from the replica's:
Never, OnFailure, Always; ExitCode becomes Never): with OnFailure (non-zero exit) and Always
(any exit) the process is started again in place and restartCount goes up, with a crash-loop
back-off of 1, 2, 4 ... 10 s (the kubelet's is 10 s doubling to 5 min; shorter here so local
runs stay quick); the pod stays Running meanwhile. Otherwise the pod ends Succeeded (exit 0) or
Failed (exit code kept). Deleting sends SIGTERM to the process group and SIGKILL after the pod's
terminationGracePeriodSeconds (default 5 s here, 30 s in Kubernetes). When the main process
exits, what is left of its process group is killed, as a container's would be.

A process's end is read from the operating system in one place (`poll`, through `_reap`) and
acted on once there; everything else (`alive`, `gone`, the runner's "is anything running")
reads what `poll` recorded, so a replica that exits between two of the runner's reads is never
seen running by one and ended by the other.
"""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from taas_operator.api.constants import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from taas_operator.api.validation import normalize_replica_type
from taas_operator.local.container import Launch
from taas_operator.planner import ObservedPod, backoff_delay
from taas_operator.planner.observed import PodPhase
from taas_operator.processes import signal_group, spawn

LOCAL_GRACE_SECONDS = 5
BACKOFF_START, BACKOFF_MAX = 1.0, 10.0

LineFn = Callable[[str, bytes], None]
"""(pod name, one output line as bytes) -> None."""


def _exit_code(returncode: int) -> int:
    """A container runtime's exit code: a signal N reads as 128 + N (SIGKILL -> 137)."""
    return 128 - returncode if returncode < 0 else returncode


class LocalPod:
    """One pod: its process, restarts, phase and exit code."""

    def __init__(
        self,
        manifest: dict[str, Any],
        uid: str,
        launch: Launch,
        on_line: LineFn,
        namespaces: tuple[int, ...] = (),
    ) -> None:
        self.manifest, self.uid, self.launch, self.on_line = manifest, uid, launch, on_line
        self.namespaces = namespaces
        meta, spec = manifest["metadata"], manifest.get("spec") or {}
        self.name: str = meta["name"]
        rtype = normalize_replica_type(meta["labels"][LABEL_REPLICA_TYPE])
        assert rtype is not None
        self.replica_type = rtype
        self.index = int(meta["labels"][LABEL_REPLICA_INDEX])
        self.restart_policy: str = spec.get("restartPolicy", "Never")
        grace = spec.get("terminationGracePeriodSeconds")
        self.grace = float(LOCAL_GRACE_SECONDS if grace is None else grace)
        self.proc: subprocess.Popen[bytes] | None = None
        self.phase: PodPhase = "Pending"
        self.exit_code: int | None = None
        self.reason: str | None = None
        self.restart_count = 0
        self.restart_at: datetime | None = None
        self.deleting_since: datetime | None = None
        self.stopping = self.stopped = False  # deleted while running / and it has ended
        self.running = False  # a process was started and poll has not yet seen it end
        self._readers: list[threading.Thread] = []

    # -- process -----------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """pid of the current process, if one runs."""
        return self.proc.pid if self.proc and self.proc.returncode is None else None

    @property
    def alive(self) -> bool:
        """A process is running, as the last `poll` saw it."""
        return self.running

    def _reap(self) -> bool:
        """True once, at the first poll that finds the running process ended."""
        if not self.running or self.proc is None or self.proc.poll() is None:
            return False
        self.running = False
        return True

    def start(self) -> None:
        """Start the container process (main thread only: the death signal follows it)."""
        self.proc = spawn(
            self.launch.argv, env=self.launch.env, cwd=self.launch.cwd, namespaces=self.namespaces
        )
        self.phase, self.restart_at, self.running = "Running", None, True
        reader = threading.Thread(target=self._pump, args=(self.proc,), daemon=True)
        reader.start()
        self._readers.append(reader)

    def _pump(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for line in iter(proc.stdout.readline, b""):
            self.on_line(self.name, line)
        proc.stdout.close()

    def flush_logs(self, timeout: float = 2.0) -> None:
        """Wait (briefly) until the output of ended processes has been passed on."""
        for reader in self._readers:
            reader.join(timeout)
        self._readers = [r for r in self._readers if r.is_alive()]

    # -- kubelet loop --------------------------------------------------------------------------
    def poll(self, now: datetime) -> bool:
        """Notice exits, restart in place or end the pod; True when the state changed."""
        ended = self._reap()
        if self.deleting_since is not None:
            if self.running:
                if now - self.deleting_since >= timedelta(seconds=self.grace):
                    self.kill()
            elif self.stopping and self.proc is not None:
                self.stopping, self.stopped = False, True
                self.exit_code = _exit_code(self.proc.returncode)
                self.reason = "Stopped"
            return False
        if self.restart_at is not None:
            if now >= self.restart_at:
                self.start()
                return True
            return False
        if not ended or self.proc is None:
            return False
        code = self.proc.returncode
        assert code is not None
        signal_group(self.proc, signal.SIGKILL)  # the container's leftovers go with it
        self.flush_logs()
        self.exit_code = _exit_code(code)
        self.reason = "Completed" if code == 0 else "Error"
        if self.restart_policy == "Always" or (self.restart_policy == "OnFailure" and code != 0):
            self.restart_count += 1
            delay = backoff_delay(self.restart_count, BACKOFF_START, BACKOFF_MAX)
            self.restart_at = now + timedelta(seconds=delay)
            return True
        self.phase = "Succeeded" if code == 0 else "Failed"
        return True

    def delete(self, now: datetime) -> None:
        """Begin deletion: SIGTERM now, SIGKILL after the grace period (see poll)."""
        if self.deleting_since is not None:
            return
        self.deleting_since, self.restart_at = now, None
        if self.running:
            assert self.proc is not None
            self.stopping = True
            signal_group(self.proc, signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL the process group at once (the next poll records the end)."""
        if self.proc is not None and self.running:
            signal_group(self.proc, signal.SIGKILL)

    @property
    def gone(self) -> bool:
        """Deleted and its process has ended: the pod no longer exists."""
        return self.deleting_since is not None and not self.running

    def observed(self) -> ObservedPod:
        """The pod as the planner sees it."""
        return ObservedPod(
            name=self.name,
            replica_type=self.replica_type,
            index=self.index,
            phase=self.phase,
            uid=self.uid,
            exit_code=self.exit_code,
            reason=self.reason,
            restart_count=self.restart_count,
            deleting=self.deleting_since is not None,
        )

    def state(self) -> str:
        """A word for the table."""
        if self.deleting_since is not None:
            if self.alive:
                return "Terminating"
            if self.stopped:  # deleted while running: it was stopped, or ended just then
                return "Completed" if self.exit_code == 0 else "Stopped"
            if self.phase == "Running" and self.reason:  # deleted waiting to restart
                return f"{self.reason}, deleted"  # how its last run ended: Error, Completed
            return f"{self.phase}, deleted"
        if self.restart_at is not None:
            return "CrashLoopBackOff"
        return self.phase
