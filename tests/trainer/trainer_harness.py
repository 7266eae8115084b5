"""Launch a real TensorFlow cluster of trainer processes on 127.0.0.1 and collect the results.

Each task is its own process (own process group) with a Kubeflow-style ``TF_CONFIG``; stdout and
stderr go to a log file per task. :meth:`LocalCluster.close` kills every process group still
alive, so a failing test never leaves processes behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from taas_operator.local.process import free_ports, spawn, stop

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Task:
    """One launched process."""

    kind: str
    index: int
    log: Path
    proc: subprocess.Popen[bytes]

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.index}"

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class LocalCluster:
    """A cluster spec with free ports, and the processes started on it."""

    script: list[str]
    workdir: Path
    shape: dict[str, int]
    env: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, Task] = field(default_factory=dict)
    cluster: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ports = iter(free_ports(sum(self.shape.values())))
        self.cluster = {
            kind: [f"127.0.0.1:{next(ports)}" for _ in range(n)]
            for kind, n in sorted(self.shape.items())
        }
        self.workdir.mkdir(parents=True, exist_ok=True)

    def tf_config(self, kind: str, index: int) -> str:
        return json.dumps(
            {
                "cluster": self.cluster,
                "task": {"type": kind, "index": index},
                "environment": "cloud",
            }
        )

    def start(self, kind: str, index: int, extra_args: list[str] | None = None) -> Task:
        """Start (or restart) one task; a restart appends to the same log file."""
        log = self.workdir / f"{kind}-{index}.log"
        env = {**os.environ, **self.env, "TF_CONFIG": self.tf_config(kind, index)}
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        with open(log, "ab") as out:
            proc = spawn(
                [sys.executable, *self.script, *(extra_args or [])], env=env, cwd=REPO, stdout=out
            )
        task = Task(kind, index, log, proc)
        self.tasks[task.name] = task
        return task

    def start_all(self, extra_args: list[str] | None = None) -> None:
        for kind, hosts in self.cluster.items():
            for i in range(len(hosts)):
                self.start(kind, i, extra_args)

    def wait(self, timeout: float) -> dict[str, int]:
        """Wait for every task to exit; return name -> exit code. Raise on timeout."""
        deadline = time.monotonic() + timeout
        codes: dict[str, int] = {}
        for name, task in self.tasks.items():
            remaining = max(deadline - time.monotonic(), 0.1)
            try:
                codes[name] = task.proc.wait(remaining)
            except subprocess.TimeoutExpired:
                raise AssertionError(
                    f"{name} still running after {timeout}s; logs:\n{self.logs()}"
                ) from None
        return codes

    def wait_for_line(self, name: str, needle: str, timeout: float) -> None:
        """Block until ``needle`` appears in task ``name``'s log (polling the file)."""
        deadline = time.monotonic() + timeout
        while needle not in self.tasks[name].text():
            if time.monotonic() > deadline or self.tasks[name].proc.poll() is not None:
                raise AssertionError(f"{name} never printed {needle!r}; logs:\n{self.logs()}")
            time.sleep(0.1)

    def kill(self, name: str) -> None:
        """SIGKILL one task's process group (a crash, as a node loss would look)."""
        stop(self.tasks[name].proc, signal.SIGKILL, grace=0)

    def logs(self) -> str:
        return "\n".join(f"===== {n}\n{t.text()[-4000:]}" for n, t in self.tasks.items())

    def close(self) -> None:
        for task in self.tasks.values():
            stop(task.proc, signal.SIGKILL, grace=0)
