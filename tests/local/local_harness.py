"""Helpers for the `taas run` tests: TFJob manifests of tiny `python -c` replicas, running the
`taas` CLI as a subprocess, reading the process table from /proc (no psutil), and probing TCP
ports from this test's own network namespace.

Nothing is faked: the runner, the engine and the replica processes are all real. Every
replica command carries a unique token so a test can find its processes in /proc.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from taas_operator.processes import spawn, stop

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


def one_error(result: subprocess.CompletedProcess[str]) -> str:
    """The single error message of a command refused before it started anything: exit 2,
    nothing on stdout, one `error: ` line (and its bullet lines) on stderr, no traceback."""
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert result.stderr.startswith("error: ")
    assert result.stderr.count("error: ") == 1
    assert "Traceback" not in result.stderr
    return result.stderr


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
    by line, for the signal and network tests; `prefix` runs it through a wrapper (setpriv),
    `taas` is the command (another interpreter)."""

    def __init__(
        self,
        path: Path,
        *extra: str,
        prefix: Sequence[str] = (),
        taas: Sequence[str] = TAAS,
        env: dict[str, str] | None = None,
    ) -> None:
        self.proc = spawn(
            [*prefix, *taas, "run", str(path), "--no-color", *extra],
            cwd=REPO,
            env={**os.environ, **(env or {})},
        )
        self.lines: list[str] = []

    def wait_for(self, text: str, count: int = 1) -> None:
        """Read output until `text` has been seen in `count` lines (pytest-timeout bounds it)."""
        assert self.proc.stdout is not None
        while sum(text in line for line in self.lines) < count:
            line = self.proc.stdout.readline().decode(errors="replace")
            assert line, "runner ended early:\n" + "".join(self.lines)
            self.lines.append(line)

    def line_with(self, text: str) -> str:
        """The first line read so far that contains `text`."""
        return next(line for line in self.lines if text in line)

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        """Exit code and the whole output."""
        assert self.proc.stdout is not None
        rest = self.proc.stdout.read().decode(errors="replace")
        code = self.proc.wait(timeout)
        return code, "".join(self.lines) + rest

    def kill(self) -> None:
        """SIGKILL the runner's group if it is still there."""
        stop(self.proc, signal.SIGKILL, grace=0)


def host_addresses() -> list[str]:
    """This machine's own non-loopback IPv4 addresses, one per interface that has one."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])
            try:
                answer = fcntl.ioctl(sock.fileno(), 0x8915, request)  # SIOCGIFADDR
            except OSError:
                continue  # no IPv4 address on this interface
            address = socket.inet_ntoa(answer[20:24])
            if not address.startswith("127."):
                found.append(address)
    return found


def probe(host: str, port: int) -> str:
    """Connect from this process's network namespace: "connected", "refused" or the error."""
    try:
        with socket.create_connection((host, port), timeout=3):
            return "connected"
    except ConnectionRefusedError:
        return "refused"
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"


def listening_ports(pid: int) -> set[int]:
    """TCP ports in LISTEN state in the network namespace of process `pid` (its /proc/net)."""
    ports = set()
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


#: The variables a program of the trainer library reads its model dir from.
MODEL_DIR_VARIABLES = ("TF_LOGDIR", "TF_MODEL_DIR", "TAAS_MODEL_DIR")


def fresh_copy(path: str, tmp_path: Path) -> Path:
    """An example TFJob file with every /tmp directory in its env moved under `tmp_path`, and a
    model dir there for a job that names none (the trainer's default, /tmp/taas-model, is
    shared by every run on the machine), so a run never resumes from an earlier run's
    checkpoint (commands stay relative to the repo)."""
    docs = list(yaml.safe_load_all((REPO / path).read_text()))
    for doc in docs:
        for spec in (doc.get("spec") or {}).get("tfReplicaSpecs", {}).values():
            for container in spec["template"]["spec"]["containers"]:
                env = container.setdefault("env", [])
                for entry in env:
                    value = entry.get("value")
                    if isinstance(value, str) and value.startswith("/tmp/"):
                        entry["value"] = str(tmp_path / value.strip("/").replace("/", "_"))
                if not any(entry.get("name") in MODEL_DIR_VARIABLES for entry in env):
                    env.append({"name": "TAAS_MODEL_DIR", "value": str(tmp_path / "model")})
    copy = tmp_path / Path(path).name
    copy.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return copy


def replica_pid(kind: str, index: int, variable: str, value: str) -> int:
    """The live replica process of task kind:index (its TF_CONFIG) whose environment has
    ``variable=value`` (what tells this test's job from any other run's)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        values = dict(item.decode(errors="replace").partition("=")[::2] for item in environ)
        if values.get(variable) != value or "TF_CONFIG" not in values:
            continue
        task = json.loads(values["TF_CONFIG"])["task"]
        if (task["type"], task["index"]) == (kind, index):
            return int(entry.name)
    raise AssertionError(f"no process for {kind}:{index} with {variable}={value}")
