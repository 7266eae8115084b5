"""Stopping `taas run`: SIGINT and SIGTERM stop every replica and report the job as stopped;
SIGKILL of the runner still leaves no replica behind (PR_SET_PDEATHSIG). The process table is
read from /proc. Nothing is mocked.
"""

from __future__ import annotations

import os
import signal

import pytest

from tests.local.local_harness import (
    Runner,
    kill_marked,
    pids_with,
    replica,
    tfjob,
    token,
    wait_gone,
    write,
)

pytestmark = pytest.mark.timeout(60)


def long_job(marker: str) -> dict:
    """1 PS + 2 workers that run for minutes; one worker ignores SIGTERM and has a child."""
    stubborn = (
        "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)  # {marker}']); "
        f"print('ready', flush=True); time.sleep(300)  # {marker}"
    )
    plain = f"import time; print('ready', flush=True); time.sleep(300)  # {marker}"
    worker = replica(plain, replicas=2)
    ps = replica(stubborn)
    # a field of the pod, not of a container (the CRD's schema refuses it there)
    ps["template"]["spec"]["terminationGracePeriodSeconds"] = 1
    return tfjob("stopme", {"PS": ps, "Worker": worker})


@pytest.mark.parametrize(
    ("sig", "code", "name"),
    [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")],
    ids=["SIGINT", "SIGTERM"],
)
def test_signal_stops_every_replica(tmp_path, sig: signal.Signals, code: int, name: str) -> None:
    marker = token()
    runner = Runner(write(tmp_path, long_job(marker)))
    try:
        runner.wait_for("ready", count=3)
        assert len(pids_with(marker)) == 4  # 3 replicas + the PS's child
        runner.proc.send_signal(sig)
        exit_code, output = runner.finish()
        assert exit_code == code, output
        assert f"TFJob stopme stopped by {name} before it finished" in output
        assert wait_gone(marker, timeout=0) == []  # gone by the time the runner exits
    finally:
        runner.kill()
        kill_marked(marker)


def test_sigkill_of_the_runner_leaves_no_replica(tmp_path) -> None:
    marker = token()
    job = tfjob(
        "orphan",
        {
            "Worker": replica(
                f"import time; print('ready', flush=True); time.sleep(300) # {marker}", replicas=2
            )
        },
    )
    # A SIGKILLed runner cannot remove its job's private progress directory: keep it here.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    runner = Runner(write(tmp_path, job), env={"TMPDIR": str(scratch)})
    try:
        runner.wait_for("ready", count=2)
        assert len(pids_with(marker)) == 2
        os.kill(runner.proc.pid, signal.SIGKILL)
        runner.proc.wait()
        assert wait_gone(marker, timeout=10) == []
    finally:
        runner.kill()
        kill_marked(marker)
