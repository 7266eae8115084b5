"""`taas tensorboard` on this machine, for real: a job run with `taas run` (real TensorFlow),
then TensorBoard (the real `tensorboard` package, its own process) on that job's model_dir,
asked through its HTTP API for the scalars the chief wrote; stopped with SIGTERM, nothing left.
Bad input gets one line naming the fix and exit 2, never a traceback and never a wait.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_operator.processes import spawn, stop

REPO = Path(__file__).resolve().parents[2]
TAAS = [sys.executable, "-m", "taas_operator.cli"]
pytestmark = [pytest.mark.timeout(300)]


def _taas(*args: str, cwd: Path = REPO, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TAAS, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def _job_file(tmp_path: Path, model_dir: str) -> Path:
    """examples/linear_regression with 1 PS and 1 worker, summaries every 20 of 200 steps."""
    doc = yaml.safe_load((REPO / "examples/linear_regression/tfjob.yaml").read_text())
    specs = doc["spec"]["tfReplicaSpecs"]
    specs["Worker"]["replicas"] = 1
    container = specs["Worker"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    env["TF_LOGDIR"] = {"name": "TF_LOGDIR", "value": model_dir}
    env["TF_MAX_STEPS"] = {"name": "TF_MAX_STEPS", "value": "200"}
    env["TAAS_SAVE_SUMMARIES_STEPS"] = {"name": "TAAS_SAVE_SUMMARIES_STEPS", "value": "20"}
    container["env"] = list(env.values())
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.loads(answer.read())


class _Serving:
    """`taas tensorboard ...` as a child; `url` once it printed where it serves."""

    def __init__(self, *args: str) -> None:
        self.proc = spawn([*TAAS, "tensorboard", *args, "--port", "0"], cwd=REPO)
        self.output: list[str] = []
        deadline = time.monotonic() + 120
        self.url = ""
        assert self.proc.stdout is not None
        while time.monotonic() < deadline and not self.url:
            line = self.proc.stdout.readline().decode(errors="replace")
            if not line and self.proc.poll() is not None:
                break
            self.output.append(line)
            found = re.search(r" at (http://\S+/) \(Ctrl-C", line)
            self.url = found.group(1) if found else ""
        assert self.url, "".join(self.output)

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        os.kill(self.proc.pid, sig)
        return self.proc.wait(30)

    def close(self) -> None:
        stop(self.proc, signal.SIGKILL, grace=0)


def _tensorboards_of(marker: str) -> list[str]:
    """Processes whose command line names `marker` and runs tensorboard."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "tensorboard" in cmdline and marker in cmdline and entry.name.isdigit():
            found.append(cmdline)
    return found


@pytest.mark.tensorflow
def test_a_taas_run_jobs_scalars_through_tensorboards_http_api(tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    job = _job_file(tmp_path, str(model_dir))
    run = _taas("run", str(job), "--no-color", "--quiet-table")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]

    served = _Serving(str(job))
    try:
        assert str(model_dir) in "".join(served.output)
        tags = _get(served.url + "data/plugin/scalars/tags")
        assert "loss" in tags["."], tags
        query = urllib.parse.urlencode({"run": ".", "tag": "loss"})
        points = _get(served.url + f"data/plugin/scalars/scalars?{query}")
        steps = [step for _, step, _ in points]
        # the chief's summaries every 20 steps, up to the end of its 200
        assert len(steps) >= 5 and max(steps) >= 180, points
        assert all(isinstance(value, float) for _, _, value in points)
        assert served.stop() == 143
    finally:
        served.close()
    assert not _tensorboards_of(str(model_dir))


def test_a_directory_without_summaries_is_served_with_a_note(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    served = _Serving(str(empty))
    try:
        assert "no summaries in" in "".join(served.output)
        assert _get(served.url + "data/plugin/scalars/tags") == {}
        assert served.stop(signal.SIGINT) == 130
    finally:
        served.close()
    assert not _tensorboards_of(str(empty))


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["missing.yaml"], ['the path "missing.yaml" does not exist']),
        (["/no/such/dir"], ["neither a TFJob file nor a directory"]),
        (["{job}"], ["model_dir (env TF_LOGDIR of its Worker 0)", "does not exist", "taas run"]),
        (["job-on-a-cluster", "--kubeconfig", "/no/kubeconfig"], ["does not exist", "job.yaml"]),
        (["x.yaml", "--port", "70000"], ["--port must be"]),
    ],
)
def test_bad_input_says_what_to_do(args: list[str], words: list[str], tmp_path: Path) -> None:
    job = _job_file(tmp_path, str(tmp_path / "not-run-yet"))
    started = time.monotonic()
    done = _taas("tensorboard", *(a.format(job=job) for a in args), cwd=REPO, timeout=60)
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr, done.stderr
    assert time.monotonic() - started < 30
