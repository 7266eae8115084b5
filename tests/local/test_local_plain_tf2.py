"""The trainer library is a convenience, never a requirement: a plain TensorFlow 2 program that
reads TF_CONFIG itself (``programs/plain_tf2.py``, MultiWorkerMirroredStrategy, no TaaS import)
runs to Succeeded under `taas run` with the TF_CONFIG the operator writes. Real processes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from local_harness import condition, final_status, run_taas, tfjob, write

pytestmark = [pytest.mark.tensorflow, pytest.mark.timeout(240)]


def test_plain_tf2_program_reading_tf_config_succeeds(tmp_path: Path) -> None:
    container = {
        "name": "tensorflow",
        "image": "example.org/any-tensorflow-image:2.21",
        "command": ["python", "tests/local/programs/plain_tf2.py"],
    }
    worker = {
        "replicas": 2,
        "restartPolicy": "Never",
        "template": {"spec": {"containers": [container]}},
    }
    job = write(tmp_path, tfjob("plain-tf2", {"Worker": worker}))
    result = run_taas("run", str(job), "--no-color", "--quiet-table", timeout=220)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    assert condition(final_status(result.stdout, "plain-tf2"), "Succeeded")["status"] == "True"
    match = re.search(r"learned w=(-?[0-9.]+) b=(-?[0-9.]+) taas imported: (\w+)", result.stdout)
    assert match, result.stdout[-4000:]
    assert abs(float(match[1]) - 2.0) < 0.1 and abs(float(match[2]) - 1.0) < 0.1
    assert match[3] == "False"
