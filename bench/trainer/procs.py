"""Running the timed programs: a subprocess in its own process group, killed on timeout.

run(cmd, env=None, timeout_s=600) -> Completed(rc, seconds, output)
bench_lines(text) -> list[dict]           # the `BENCH {json}` lines of a program's output
taas_run(job_yaml_text, workdir, timeout_s) -> (Completed, launched_unix, logs: dict[pod, text])
tfjob(name, ps, workers, env, command=None) -> str   # TFJob YAML running bench_model.py
tensorflow_first(program) -> list[str]     # the program's command, TensorFlow imported first
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from taas_operator.processes import spawn, stop

REPO_ROOT = Path(__file__).resolve().parents[2]
PROGRAM = "bench/trainer/programs/bench_model.py"
QUIET = {
    "TAAS_SAVE_SUMMARIES_STEPS": "0",
    "TAAS_SAVE_CHECKPOINTS_SECS": "0",
    "TAAS_LOG_EVERY_STEPS": "0",
    "TF_CPP_MIN_LOG_LEVEL": "2",
}


class BenchError(RuntimeError):
    """A timed program failed: the message carries its exit code and output tail."""


@dataclass
class Completed:
    rc: int
    seconds: float
    output: str


def run(cmd: list[str], env: dict[str, str] | None = None, timeout_s: float = 600) -> Completed:
    """Run `cmd` from the repository root; raise BenchError unless it exits 0."""
    started = time.monotonic()
    proc = spawn(cmd, env={**os.environ, **(env or {})}, cwd=REPO_ROOT)
    try:
        raw, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop(proc, signal.SIGKILL, grace=0)
        raw, _ = proc.communicate()
        output = raw.decode(errors="replace")
        raise BenchError(f"{' '.join(cmd)} ran past {timeout_s:.0f}s:\n{output[-2000:]}") from None
    finally:
        stop(proc, signal.SIGKILL, grace=0)  # nothing of it may outlive the run
    output = raw.decode(errors="replace")
    done = Completed(proc.returncode, time.monotonic() - started, output)
    if done.rc != 0:
        raise BenchError(f"{' '.join(cmd)} exited {done.rc}:\n{output[-3000:]}")
    return done


def bench_lines(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(line.split("BENCH ", 1)[1])
        for line in text.splitlines()
        if line.startswith("BENCH ")
    ]


def first_steps(text: str) -> list[float]:
    """Unix times of the `BENCH_FIRST` lines (printed at a task's first step)."""
    return [
        json.loads(line.split(" ", 1)[1])["unix"]
        for line in text.splitlines()
        if line.startswith("BENCH_FIRST ")
    ]


def tensorflow_first(program: str) -> list[str]:
    """`python PROGRAM` as a program that imports TensorFlow at its top would run: TensorFlow
    imported before the program (so no task can serve without its Python API)."""
    code = (
        "import sys, runpy, tensorflow; "
        f"sys.argv[0] = {program!r}; runpy.run_path({program!r}, run_name='__main__')"
    )
    return ["python", "-c", code]


def tfjob(
    name: str, ps: int, workers: int, env: dict[str, str], command: list[str] | None = None
) -> str:
    container = {
        "name": "tensorflow",
        "image": "local",
        "command": command or ["python", PROGRAM],
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }
    replica = {"restartPolicy": "Never", "template": {"spec": {"containers": [container]}}}
    specs: dict[str, Any] = {"Worker": {"replicas": workers, **replica}}
    if ps:
        specs["PS"] = {"replicas": ps, **replica}
    return yaml.safe_dump(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {"name": name},
            # None: when worker 0 ends the job, the other workers still finish and report
            "spec": {"runPolicy": {"cleanPodPolicy": "None"}, "tfReplicaSpecs": specs},
        }
    )


def taas_run(
    job_yaml: str, workdir: Path, timeout_s: float = 600
) -> tuple[Completed, float, dict[str, str]]:
    """`taas run` the job; return the run, when it was launched (unix time), each pod's log."""
    workdir.mkdir(parents=True, exist_ok=True)
    job = workdir / "job.yaml"
    job.write_text(job_yaml)
    logs = workdir / "logs"
    taas = Path(sys.executable).with_name("taas")
    exe = [str(taas)] if taas.exists() else [sys.executable, "-m", "taas_operator.cli"]
    launched = time.time()
    done = run(
        [*exe, "run", str(job), "--logs-dir", str(logs), "--no-color", "--quiet-table"],
        timeout_s=timeout_s,
    )
    return done, launched, {p.stem: p.read_text(errors="replace") for p in logs.glob("*.log")}
