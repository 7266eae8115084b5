"""SIGTERM to a worker of a TensorFlow 2 example mid-run, under `taas run` (real processes,
restartPolicy ExitCode as in the example YAMLs): the job still Succeeds with a real accuracy.

- MultiWorkerMirroredStrategy: the signalled worker and its peer agree on a step, the chief
  saves a checkpoint there, both exit 143, the runner recreates both pods and they resume from
  that checkpoint: at most one checkpoint interval of steps is lost (none, in fact).
- ParameterServerStrategy: the worker dies (143) and is recreated; the coordinator never stops
  (its steps move to the other worker meanwhile), and the recreated worker rejoins and is told
  "done" at the end.

The signalled process is found through /proc by the TF_CONFIG task in its environment and the
test's own model dir. Nothing is mocked.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
import yaml

from tests.local.local_harness import Runner, condition, final_status, fresh_copy, replica_pid

pytestmark = [pytest.mark.tensorflow, pytest.mark.slow, pytest.mark.timeout(400)]

STEPS = 1500
INTERVAL = 100  # TAAS_SAVE_CHECKPOINTS_STEPS
PROGRESS = re.compile(r"\[(\w+):(\d+)\] step \d+ global (\d+)/")


def _job(example: str, tmp_path: Path, drop: tuple[str, ...] = ()) -> tuple[Path, str]:
    """A copy of the example with more steps and fixed checkpoint and log intervals."""
    path = fresh_copy(example, tmp_path)
    (doc,) = list(yaml.safe_load_all(path.read_text()))
    overrides = {
        "TF_MAX_STEPS": str(STEPS),
        "TAAS_SAVE_CHECKPOINTS_STEPS": str(INTERVAL),
        "TAAS_LOG_EVERY_STEPS": "50",
    }
    for kind in drop:
        del doc["spec"]["tfReplicaSpecs"][kind]
    model_dir = ""
    for spec in doc["spec"]["tfReplicaSpecs"].values():
        for entry in spec["template"]["spec"]["containers"][0]["env"]:
            entry["value"] = overrides.get(entry["name"], entry["value"])
            if entry["name"] == "TF_LOGDIR":
                model_dir = entry["value"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path, model_dir


def _pid_of(kind: str, index: int, model_dir: str) -> int:
    """The live replica process of task kind:index of the job writing to ``model_dir``."""
    return replica_pid(kind, index, "TF_LOGDIR", model_dir)


def _last_global(runner: Runner, task: str) -> int:
    steps = [
        int(m[3])
        for line in runner.lines
        if (m := PROGRESS.search(line)) and f"{m[1]}:{m[2]}" == task
    ]
    return max(steps, default=0)


def _wait_for_progress(runner: Runner, task: str, at_least: int) -> None:
    while _last_global(runner, task) < at_least:
        seen = sum(f"[{task}] step" in line for line in runner.lines)
        runner.wait_for(f"[{task}] step", count=seen + 1)


def _first_run(output: str, replica: str) -> str:
    """The last lines ``replica`` printed before it started again: why its first run ended."""
    lines = [line for line in output.splitlines() if line.startswith(f"[{replica}] ")]
    starts = [i for i, line in enumerate(lines) if "model ready" in line]
    return "\n".join(lines[: starts[1]][-80:] if len(starts) > 1 else lines[-80:])


def _accuracy(output: str) -> float:
    found = re.findall(r"test accuracy: ([0-9.]+)", output)
    assert found, output[-4000:]
    return float(found[-1])


def test_sigterm_to_a_multi_worker_mirrored_worker_resumes_from_its_checkpoint(
    tmp_path: Path,
) -> None:
    job, model_dir = _job("examples/keras_digits/mwms.yaml", tmp_path, drop=("Evaluator",))
    runner = Runner(job, "--quiet-table")
    try:
        _wait_for_progress(runner, "worker:1", 300)
        at_kill = _last_global(runner, "worker:1")
        os.kill(_pid_of("worker", 1, model_dir), signal.SIGTERM)
        code, output = runner.finish(timeout=300)
    finally:
        runner.kill()
    assert code == 0, output[-6000:]
    status = final_status(output, "keras-mwms")
    assert condition(status, "Succeeded")["status"] == "True"
    # Both workers stopped at the agreed step with the retryable code, and were recreated.
    stopped = re.findall(r"\[(worker:\d)\] SIGTERM: stopped after a (.*?); exit 143", output)
    assert {task for task, _ in stopped} == {"worker:0", "worker:1"}, output[-6000:]
    (saved,) = [int(s) for s in re.findall(r"checkpoint at global step (\d+)", output)]
    resumed = [
        int(s) for s in re.findall(r"resuming from checkpoint \S+ \(global step (\d+)\)", output)
    ]
    assert resumed == [saved], output[-6000:]
    assert saved >= at_kill - INTERVAL  # at most one checkpoint interval lost
    assert f"global step {STEPS}" in output
    assert _accuracy(output) > 0.9


def test_sigterm_to_a_parameter_server_worker_is_tolerated_and_it_rejoins(tmp_path: Path) -> None:
    job, model_dir = _job("examples/keras_digits/pss.yaml", tmp_path)
    runner = Runner(job, "--quiet-table")
    try:
        _wait_for_progress(runner, "chief:0", 300)
        os.kill(_pid_of("worker", 1, model_dir), signal.SIGTERM)
        code, output = runner.finish(timeout=300)
    finally:
        runner.kill()
    assert code == 0, output[-6000:]
    status = final_status(output, "keras-pss")
    assert condition(status, "Succeeded")["status"] == "True"
    # The coordinator never stopped: one start, every step done once, nothing lost.
    assert output.count("[chief:0] model ready") == 1, _first_run(output, "chief-0")
    assert f"[chief:0] training done: {STEPS} local steps, global step {STEPS}" in output
    # The worker was recreated and served again.
    assert output.count("[worker:1] serving at") == 2, output[-6000:]
    assert _accuracy(output) > 0.9
