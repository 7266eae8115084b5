"""Helpers for the `taas run` tests: TFJob manifests of tiny `python -c` replicas, running the
`taas` CLI as a subprocess, and reading the process table from /proc (no psutil).

Nothing is faked: the runner, the engine and the replica processes are all real. Every
replica command carries a unique token so a test can find its processes in /proc.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from taas_operator.local.process import spawn, stop

REPO = Path(__file__).resolve().parents[2]
TAAS = [sys.executable, "-m", "taas_operator.cli"]


def token() -> str:
    """A unique marker to put into replica command lines."""
    return f"taas-test-{uuid.uuid4().hex[:12]}"


def replica(
    code: str,
    *,
    replicas: int = 1,
    restart_policy: str = "Never",
    env: list[dict[str, Any]] | None = None,
    args: list[str] | None = None,
    **container: Any,
) -> dict[str, Any]:
    """A replica spec whose tensorflow container runs `python -c code`."""
    spec: dict[str, Any] = {
        "name": "tensorflow",
        "image": "example.org/never-pulled:1",
        "command": ["python", "-c", code],
        **container,
    }
    if env:
        spec["env"] = env
    if args:
        spec["args"] = args
    return {
        "replicas": replicas,
        "restartPolicy": restart_policy,
        "template": {"spec": {"containers": [spec]}},
    }


def tfjob(name: str, replica_specs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A TFJob manifest."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": replica_specs, **spec},
    }


def write(tmp_path: Path, *docs: Any, name: str = "job.yaml") -> Path:
    """Write YAML documents to a file."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def run_taas(
    *args: str, timeout: float = 60, input: str | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """`taas ARGS` to completion, output captured."""
    return subprocess.run(
        [*TAAS, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
        cwd=cwd,
    )


def final_status(stdout: str, job: str, namespace: str = "default") -> dict[str, Any]:
    """The status YAML the runner prints at the end for `job`."""
    marker = f"# TFJob {namespace}/{job}, as the operator writes it:\n"
    assert marker in stdout, stdout[-3000:]
    text = stdout.split(marker, 1)[1].split("\n\n", 1)[0]
    return yaml.safe_load(text)["status"]


def condition(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    """One condition of a status dict."""
    return next((c for c in status.get("conditions", []) if c["type"] == type_), None)


def pids_with(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_gone(marker: str, timeout: float = 10.0) -> list[int]:
    """Wait until no process carries `marker`; return those still there at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        left = pids_with(marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def kill_marked(marker: str) -> None:
    """Clean-up for a failed test: SIGKILL whatever carries `marker`."""
    for pid in pids_with(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class Runner:
    """`taas run` as a background process (its own process group) whose output is read line
    by line, for the signal tests."""

    def __init__(self, path: Path, *extra: str) -> None:
        self.proc = spawn([*TAAS, "run", str(path), "--no-color", *extra], cwd=REPO)
        self.lines: list[str] = []

    def wait_for(self, text: str, count: int = 1) -> None:
        """Read output until `text` has been seen in `count` lines (pytest-timeout bounds it)."""
        assert self.proc.stdout is not None
        while sum(text in line for line in self.lines) < count:
            line = self.proc.stdout.readline().decode(errors="replace")
            assert line, "runner ended early:\n" + "".join(self.lines)
            self.lines.append(line)

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        """Exit code and the whole output."""
        assert self.proc.stdout is not None
        rest = self.proc.stdout.read().decode(errors="replace")
        code = self.proc.wait(timeout)
        return code, "".join(self.lines) + rest

    def kill(self) -> None:
        """SIGKILL the runner's group if it is still there."""
        stop(self.proc, signal.SIGKILL, grace=0)
