"""`taas run PROGRAM.py --workers 2 --ps 1`: the TFJob `taas submit PROGRAM.py` makes, run on
this machine with each replica running the file where it is (no ConfigMap, no image): TF_CONFIG
as on a cluster, the program's arguments after `--`, the flags' env; bad flags exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.local.local_harness import final_status, one_error, run_taas, tfjob, write

pytestmark = pytest.mark.timeout(120)

PROGRAM = """\
import json, os, sys
task = json.loads(os.environ["TF_CONFIG"])["task"]
print(f"{task['type']}:{task['index']} args={sys.argv[1:]} steps={os.environ['TF_MAX_STEPS']}")
"""


def test_a_program_runs_as_the_job_submit_would_make(tmp_path: Path) -> None:
    path = tmp_path / "hello_job.py"
    path.write_text(PROGRAM)
    done = run_taas(
        "run", str(path), "--workers", "2", "--ps", "1", "--env", "TF_MAX_STEPS=5",
        "--quiet-table", "--", "--greeting", "hi",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for replica in ("ps-0", "worker-0", "worker-1"):
        task = replica.replace("-", ":")
        assert f"[{replica}] {task} args=['--greeting', 'hi'] steps=5" in done.stdout
    status = final_status(done.stdout, "hello-job")
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 2


def test_bad_flags_and_a_manifest_with_a_program_s_flags(tmp_path: Path) -> None:
    path = tmp_path / "hello_job.py"
    path.write_text(PROGRAM)
    assert "--workers 5001: must be a whole number" in one_error(
        run_taas("run", str(path), "--workers", "5001")
    )
    manifest = write(tmp_path, tfjob("demo", {"Worker": {}}))
    assert "--ps: for a program (taas submit PROGRAM.py ...), not a manifest" in one_error(
        run_taas("run", str(manifest), "--ps", "1")
    )
