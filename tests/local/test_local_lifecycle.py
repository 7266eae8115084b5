"""`taas run` drives the operator's lifecycle engine with real local processes.

Replicas are tiny `python -c` programs (no TensorFlow): restarts under ExitCode, a permanent
failure, backoffLimit, activeDeadlineSeconds, the cluster env they receive, --logs-dir and
several TFJobs in one file. Nothing is mocked.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.local.local_harness import (
    condition,
    final_status,
    kill_marked,
    replica,
    run_taas,
    tfjob,
    token,
    wait_gone,
    write,
)

pytestmark = pytest.mark.timeout(120)

COUNT_START = "import os, sys; open(os.environ['STARTS'], 'a').write('x');"


def starts_env(tmp_path: Path) -> list[dict[str, str]]:
    return [{"name": "STARTS", "value": str(tmp_path / "starts")}]


def starts(tmp_path: Path) -> int:
    path = tmp_path / "starts"
    return len(path.read_text()) if path.exists() else 0


def test_exit_130_under_exit_code_is_recreated_and_the_job_succeeds(tmp_path) -> None:
    code = COUNT_START + "sys.exit(130 if len(open(os.environ['STARTS']).read()) == 1 else 0)"
    job = tfjob(
        "retry",
        {"Worker": replica(code, restart_policy="ExitCode", env=starts_env(tmp_path))},
    )
    result = run_taas("run", str(write(tmp_path, job)), "--no-color")
    assert result.returncode == 0, result.stdout + result.stderr
    assert starts(tmp_path) == 2
    status = final_status(result.stdout, "retry")
    assert condition(status, "Succeeded")["status"] == "True"
    assert status["recreations"]["retry-worker-0"]["count"] == 1
    assert status["recreations"]["retry-worker-0"]["lastExitCode"] == 130
    assert "Warning TFJobRestarting:" in result.stdout
    assert "TFJob retry Succeeded" in result.stdout


def test_exit_1_under_exit_code_fails_the_job_naming_replica_and_code(tmp_path) -> None:
    job = tfjob(
        "perm",
        {
            "PS": replica("import time; time.sleep(60)"),
            "Worker": replica(
                COUNT_START + "sys.exit(1)", restart_policy="ExitCode", env=starts_env(tmp_path)
            ),
        },
    )
    result = run_taas("run", str(write(tmp_path, job)), "--no-color")
    assert result.returncode == 1, result.stdout + result.stderr
    assert starts(tmp_path) == 1
    failed = condition(final_status(result.stdout, "perm"), "Failed")
    assert failed["status"] == "True"
    assert "pod perm-worker-0, container tensorflow, exit code 1" in failed["message"]
    assert "TFJob perm Failed: " in result.stdout
    # cleanPodPolicy Running (default) stopped the PS; it did not sleep its 60 s.
    assert "perm/ps-0" in result.stdout and "Stopped" in result.stdout


@pytest.mark.parametrize(
    ("policy", "exit_code"), [("ExitCode", 137), ("OnFailure", 1)], ids=["ExitCode", "OnFailure"]
)
def test_backoff_limit_stops_restarts(tmp_path, policy: str, exit_code: int) -> None:
    code = COUNT_START + f"sys.exit({exit_code})"
    job = tfjob(
        "backoff",
        {"Worker": replica(code, restart_policy=policy, env=starts_env(tmp_path))},
        runPolicy={"backoffLimit": 2},
    )
    result = run_taas("run", str(write(tmp_path, job)), "--no-color")
    assert result.returncode == 1, result.stdout + result.stderr
    # Two restarts reach the limit: the job fails instead of starting a third time.
    assert starts(tmp_path) == 2
    failed = condition(final_status(result.stdout, "backoff"), "Failed")
    assert "reached the specified backoff limit" in failed["message"]
    assert f"exit code {exit_code}" in failed["message"]


def test_active_deadline_stops_a_long_job_on_time(tmp_path) -> None:
    marker = token()
    job = tfjob(
        "slow",
        {"Worker": replica(f"import time; time.sleep(120)  # {marker}", replicas=2)},
        runPolicy={"activeDeadlineSeconds": 3},
    )
    try:
        began = time.monotonic()
        result = run_taas("run", str(write(tmp_path, job)), "--no-color")
        took = time.monotonic() - began
        assert result.returncode == 1, result.stdout + result.stderr
        failed = condition(final_status(result.stdout, "slow"), "Failed")
        assert "active longer than specified deadline" in failed["message"]
        # startTime is stored to whole seconds, so the deadline can come up to 1 s early;
        # allow for the interpreter's start-up and the stop.
        assert 2.0 <= took < 8.0, took
        assert pids_left(marker) == []
    finally:
        kill_marked(marker)


def pids_left(marker: str) -> list[int]:
    return wait_gone(marker, timeout=0)


def test_replicas_get_the_cluster_env_on_127_0_0_1(tmp_path) -> None:
    dump = (
        "import json, os, sys; "
        "keys = ['TF_CONFIG', 'PS_HOSTS', 'WORKER_HOSTS', 'JOB_NAME', 'TASK_INDEX', 'POD']; "
        "print('ENV', json.dumps({k: os.environ.get(k) for k in keys} | "
        "{'argv': sys.argv[1:], 'exe': sys.executable, 'cwd': os.getcwd()}), flush=True)"
    )
    env = [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    args = ["$(JOB_NAME)", "$(TASK_INDEX)", "$$(JOB_NAME)", "$(NOT_SET)"]
    job = tfjob(
        "envs",
        {
            "PS": replica(dump + "; import time; time.sleep(60)", env=env, args=args),
            "Worker": replica(
                dump + "; import time; time.sleep(1)",
                replicas=2,
                env=env,
                args=args,
                workingDir=str(tmp_path),
            ),
        },
    )
    result = run_taas("run", str(write(tmp_path, job)), "--no-color")
    assert result.returncode == 0, result.stdout + result.stderr
    seen = {}
    for line in result.stdout.splitlines():
        if " ENV " in line:
            prefix, payload = line.split(" ENV ", 1)
            seen[prefix] = json.loads(payload)
    assert set(seen) == {"[ps-0]", "[worker-0]", "[worker-1]"}
    ps_hosts = seen["[ps-0]"]["PS_HOSTS"]
    worker_hosts = seen["[ps-0]"]["WORKER_HOSTS"].split(",")
    assert ps_hosts.startswith("127.0.0.1:") and len(worker_hosts) == 2
    assert len({ps_hosts, *worker_hosts}) == 3  # a port per replica
    for name, values in seen.items():
        rtype, index = name.strip("[]").split("-")
        config = json.loads(values["TF_CONFIG"])
        assert config["cluster"] == {"ps": [ps_hosts], "worker": worker_hosts}
        assert config["task"] == {"type": rtype, "index": int(index)}
        assert values["POD"] == f"envs-{rtype}-{index}"
        assert values["argv"] == [rtype, index, "$(JOB_NAME)", "$(NOT_SET)"]
        assert Path(values["exe"]).name.startswith("python")
    assert seen["[worker-1]"]["cwd"] == str(tmp_path)
    assert "image example.org/never-pulled:1 not pulled" in result.stdout


def test_logs_dir_and_several_jobs_in_one_file(tmp_path) -> None:
    hello = "print('hello from', __import__('os').environ['JOB_NAME'])"
    first = tfjob("first", {"Worker": replica(hello)})
    second = tfjob("second", {"Chief": replica(hello), "Worker": replica(hello)})
    logs = tmp_path / "logs"
    result = run_taas(
        "run", str(write(tmp_path, first, second)), "--no-color", "--logs-dir", str(logs)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[first/worker-0] hello from worker" in result.stdout
    assert "[second/chief-0] hello from chief" in result.stdout
    assert "TFJob first Succeeded" in result.stdout and "TFJob second Succeeded" in result.stdout
    assert (logs / "first-worker-0.log").read_text() == "hello from worker\n"
    assert (logs / "second-chief-0.log").read_text() == "hello from chief\n"


@pytest.mark.parametrize(
    ("specs", "extra", "why"),
    [
        ({"PS": replica("pass")}, {}, "nothing more will start, so the job cannot finish"),
        ({"Worker": replica("pass")}, {"runPolicy": {"suspend": True}}, "suspend is true"),
    ],
    ids=["ps-only", "suspended"],
)
def test_a_job_that_cannot_finish_ends_with_a_reason(tmp_path, specs, extra, why) -> None:
    result = run_taas("run", str(write(tmp_path, tfjob("stuck", specs, **extra))), "--no-color")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "TFJob stuck not run: " in result.stdout and why in result.stdout
