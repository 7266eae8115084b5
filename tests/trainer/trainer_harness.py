"""Launch a real TensorFlow cluster of trainer processes on 127.0.0.1 and collect the results.

Each task is its own process (own process group) with the ``TF_CONFIG`` the operator and
``taas run`` write (``taas_operator.tfjob.tf_config`` for a TFJob of the cluster's shape, each
replica at 127.0.0.1 on a free port); stdout and stderr go to a log file per task.
:meth:`LocalCluster.close` kills every process group still alive, so a failing test never
leaves processes behind. :func:`run_program` runs one trainer process alone; :func:`hooks`
reads the lines of the recording trainer (``programs/recording_trainer.py``).
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
from typing import Any

from taas_operator.api import TFJob, parse_tfjob
from taas_operator.processes import free_ports, spawn, stop
from taas_operator.tfjob import cluster_spec, tf_config

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
    ports: dict[tuple[str, int], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ports = iter(free_ports(sum(self.shape.values())))
        self.ports = {
            (kind, i): next(ports) for kind, n in sorted(self.shape.items()) for i in range(n)
        }
        self.job = _tfjob(self.shape)
        self.cluster = cluster_spec(self.job, self._host)
        self.workdir.mkdir(parents=True, exist_ok=True)

    def _host(self, kind: str, index: int, port: int) -> str:
        return f"127.0.0.1:{self.ports[(kind, index)]}"

    def tf_config(self, kind: str, index: int) -> str:
        return tf_config(self.job, kind, index, self._host)

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

    def stopped_as_a_whole(
        self, training: list[str], timeout: float = 180
    ) -> tuple[dict[str, int], float]:
        """What deleting the TFJob does: start every task, wait until each of ``training`` has
        done its first step, then SIGTERM every task at once; (exit codes, seconds to the last
        exit)."""
        try:
            self.start_all()
            for name in training:
                self.wait_for_line(name, "first step done", timeout=timeout)
            time.sleep(1)
            asked = time.monotonic()
            for task in self.tasks.values():
                task.proc.send_signal(signal.SIGTERM)
            codes = self.wait(30)
            return codes, time.monotonic() - asked
        finally:
            self.close()

    def kill(self, name: str) -> None:
        """SIGKILL one task's process group (a crash, as a node loss would look)."""
        stop(self.tasks[name].proc, signal.SIGKILL, grace=0)

    def logs(self) -> str:
        return "\n".join(f"===== {n}\n{t.text()[-4000:]}" for n, t in self.tasks.items())

    def close(self) -> None:
        for task in self.tasks.values():
            stop(task.proc, signal.SIGKILL, grace=0)


def run_program(
    script: list[str], env: dict[str, str], timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """Run one trainer process to its end (no cluster), output captured as text."""
    full = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **env}
    return subprocess.run(
        [sys.executable, *script],
        cwd=REPO,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )


RECORDING = ["tests/trainer/programs/recording_trainer.py"]  # prints a HOOK line per hook


def hooks(text: str, task: str) -> list[tuple[str, dict[str, Any]]]:
    """(hook, details) of every ``HOOK <task> ...`` line, in order."""
    found = []
    for line in text.splitlines():
        if line.startswith(f"HOOK {task} "):
            _, _, hook, details = line.split(" ", 3)
            found.append((hook, json.loads(details)))
    return found


def order(records: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Hook names with repeats in a row collapsed (``train`` x N -> ``train``)."""
    names: list[str] = []
    for hook, _ in records:
        if not names or names[-1] != hook:
            names.append(hook)
    return names


def only(records: list[tuple[str, dict[str, Any]]], hook: str) -> list[dict[str, Any]]:
    """The details of every record of ``hook``, in order."""
    return [details for name, details in records if name == hook]


def _tfjob(shape: dict[str, int]) -> TFJob:
    """A TFJob with ``shape``'s replicas (lowercase types), for the operator's TF_CONFIG builder."""
    container = {"name": "tensorflow", "image": "never-pulled"}
    specs = {
        kind: {"replicas": n, "template": {"spec": {"containers": [container]}}}
        for kind, n in shape.items()
    }
    manifest = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "trainer-test", "namespace": "default"},
        "spec": {"tfReplicaSpecs": specs},
    }
    return parse_tfjob(manifest)
