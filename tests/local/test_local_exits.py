"""`taas run` reads a replica's exit once and acts on it once: a replica that ends between two
of the runner's reads (the pods' poll, then "is anything still running?") is never taken for a
job that cannot finish. Real processes; the exit is put between the two reads deterministically
(the test waits for the process to end without reaping it, then runs the second read)."""

from __future__ import annotations

import io
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

from taas_operator.documents import parse_tfjobs
from taas_operator.local.display import RunDisplay
from taas_operator.local.job_run import JobRun
from tests.local.local_harness import replica, run_taas, tfjob, write


def _settled(run: JobRun, timeout: float = 30.0) -> None:
    """Step until the plan asks for nothing more (the job Running, its replica started)."""
    deadline = time.monotonic() + timeout
    while run.dirty or not run.pods:
        assert time.monotonic() < deadline, "the job never settled"
        run.step(datetime.now(UTC))
        time.sleep(0.05)


def test_a_replica_that_exits_between_the_runners_reads_is_seen_to_succeed(tmp_path: Path) -> None:
    go = tmp_path / "go"
    code = f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
    text = yaml.safe_dump(tfjob("between", {"Worker": replica(code)}))
    (job,) = parse_tfjobs(text, "test", namespace="default")
    out = io.StringIO()
    run = JobRun(job, RunDisplay(out, color=False, live=False))
    try:
        _settled(run)
        (pod,) = run.pods.values()
        assert pod.proc is not None and pod.alive
        go.touch()
        # The replica ends here, after the runner's poll saw it running: wait for its end
        # without reaping it (the runner's next read is the first to see it).
        os.waitid(os.P_PID, pod.proc.pid, os.WEXITED | os.WNOWAIT)
        run.sync(datetime.now(UTC))  # what follows the poll in the same step
        assert run.skipped is None, out.getvalue()
        deadline = time.monotonic() + 30
        while not run.done:
            assert time.monotonic() < deadline, out.getvalue()
            run.step(datetime.now(UTC))
            time.sleep(0.05)
    finally:
        run.kill()
        run.progress.close()
    assert run.skipped is None, out.getvalue()
    assert run.job.status.is_true("Succeeded"), out.getvalue()
    assert "cannot finish" not in out.getvalue()


def test_fifty_runs_whose_workers_leave_together_at_a_barrier_all_succeed(tmp_path: Path) -> None:
    """As MultiWorkerMirroredStrategy workers do at the end (a barrier, then every worker exits
    at once): 50 runs of `taas run`, each of whose two workers exit 0 within a moment of each
    other, all exit 0 with the job Succeeded."""
    barrier = (
        "import json, os, sys, time\n"
        "index = json.loads(os.environ['TF_CONFIG'])['task']['index']\n"
        "open(os.path.join(sys.argv[1], str(index)), 'w').close()\n"
        "while len(os.listdir(sys.argv[1])) < 2: time.sleep(0.001)\n"
    )
    failures = []
    for attempt in range(50):
        folder = tmp_path / f"barrier-{attempt}"
        folder.mkdir()
        job = tfjob("together", {"Worker": replica(barrier, replicas=2, args=[str(folder)])})
        result = run_taas("run", str(write(tmp_path, job)), "--no-color", "--quiet-table")
        if result.returncode != 0 or "TFJob default/together successfully completed" not in (
            result.stdout
        ):
            failures.append(f"run {attempt}: exit {result.returncode}\n{result.stdout[-1500:]}")
    assert not failures, f"{len(failures)} of 50 runs failed:\n" + "\n".join(failures[:3])
