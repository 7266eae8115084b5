"""The trainer library is a convenience, never a requirement: a plain TensorFlow 2 program that
reads TF_CONFIG itself (``programs/plain_tf2.py``, MultiWorkerMirroredStrategy, no TaaS import)
runs to Succeeded under `taas run` with the TF_CONFIG the operator writes, and, with the
annotation `taas.dev/restart-scope: job`, also when one of its workers is SIGKILLed mid-training
(the whole job restarts: the survivor would wait in its collective for ever). Real processes."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from tests.local.local_harness import (
    Runner,
    condition,
    final_status,
    replica_pid,
    run_taas,
    tfjob,
    write,
)

pytestmark = [pytest.mark.tensorflow, pytest.mark.timeout(240)]


def _workers(restart_policy: str, env: dict[str, str] | None = None) -> dict[str, object]:
    container: dict[str, object] = {
        "name": "tensorflow",
        "image": "example.org/any-tensorflow-image:2.21",
        "command": ["python", "tests/local/programs/plain_tf2.py"],
    }
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return {
        "replicas": 2,
        "restartPolicy": restart_policy,
        "template": {"spec": {"containers": [container]}},
    }


def test_plain_tf2_program_reading_tf_config_succeeds(tmp_path: Path) -> None:
    job = write(tmp_path, tfjob("plain-tf2", {"Worker": _workers("Never")}))
    result = run_taas("run", str(job), "--no-color", "--quiet-table", timeout=220)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    assert condition(final_status(result.stdout, "plain-tf2"), "Succeeded")["status"] == "True"
    match = re.search(r"learned w=(-?[0-9.]+) b=(-?[0-9.]+) taas imported: (\w+)", result.stdout)
    assert match, result.stdout[-4000:]
    assert abs(float(match[1]) - 2.0) < 0.1 and abs(float(match[2]) - 1.0) < 0.1
    assert match[3] == "False"


def test_a_plain_tf2_job_restarting_whole_survives_a_worker_sigkilled(tmp_path: Path) -> None:
    marker_dir = tmp_path / "first-runs"
    marker_dir.mkdir()
    workers = _workers("ExitCode", {"PLAIN_FIRST_RUN_DIR": str(marker_dir)})
    doc = tfjob("plain-whole", {"Worker": workers})
    doc["metadata"]["annotations"] = {"taas.dev/restart-scope": "job"}
    runner = Runner(write(tmp_path, doc), "--quiet-table")
    try:
        runner.wait_for("worker 1 training")
        os.kill(replica_pid("worker", 1, "PLAIN_FIRST_RUN_DIR", str(marker_dir)), signal.SIGKILL)
        code, output = runner.finish(timeout=200)
    finally:
        runner.kill()
    assert code == 0, output[-5000:]
    status = final_status(output, "plain-whole")
    assert condition(status, "Succeeded")["status"] == "True"
    assert "is restarting all 2 of its Chief/Master/Worker replicas" in output, output[-5000:]
    assert "plain-whole-worker-1, container tensorflow, exit code 137" in output
    assert {k: v["count"] for k, v in status["recreations"].items()} == {"plain-whole-worker-1": 1}
    assert re.search(r"learned w=(-?[0-9.]+)", output), output[-4000:]
