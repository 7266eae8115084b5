"""`taas run` never runs silently wrong and never shows a traceback for a user's mistake
(`taas run` as a subprocess, real replica processes; nothing mocked):

- malformed pod templates, a string where a list belongs, `terminationGracePeriodSeconds: x`,
  `workingDir: 5`, a --logs-dir that is a file or cannot be written: exit 2, one message naming
  the field and the fix, and no replica ever started;
- a run that does not fit this machine (memory, process count) is refused the same way unless
  --allow-oversubscribe, which warns and runs it;
- what of a pod template is not applied locally is said in one warning line per job;
- a job with no replica at all Succeeds (as Kubeflow) with a warning saying so;
- after backoffLimit fails a job, the table and the status show the failure, not `Running`.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.local.local_harness import (
    TAAS,
    condition,
    final_status,
    one_error,
    replica,
    run_taas,
    tfjob,
    write,
)

pytestmark = pytest.mark.timeout(120)

Mutate = Callable[[dict[str, Any]], None]
WORKER = "spec.tfReplicaSpecs.Worker.template"
CONTAINER = f"{WORKER}.spec.containers[0]"


def _ran_marker(tmp_path: Path) -> dict[str, Any]:
    """A one-worker job whose replica, if it ever starts, leaves a file behind."""
    ran = tmp_path / "ran"
    return tfjob("bad", {"Worker": replica(f"open({str(ran)!r}, 'w').close()")})


def _container(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]


def _template(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["tfReplicaSpecs"]["Worker"]["template"]


def _set_env(value: Any) -> Mutate:
    return lambda job: _container(job).__setitem__("env", value)


BAD_TEMPLATES: dict[str, tuple[Mutate, str]] = {
    "env-as-map": (_set_env({"A": "1"}), f"{CONTAINER}.env"),
    "env-as-strings": (_set_env(["A=1"]), f"{CONTAINER}.env[0]"),
    "ports-as-map": (
        lambda job: _container(job).__setitem__("ports", {"tfjob-port": 2222}),
        f"{CONTAINER}.ports",
    ),
    "containerPort-abc": (
        lambda job: _container(job).__setitem__(
            "ports", [{"name": "tfjob-port", "containerPort": "abc"}]
        ),
        f"{CONTAINER}.ports[0].containerPort",
    ),
    "labels-as-list": (
        lambda job: _template(job).__setitem__("metadata", {"labels": ["a"]}),
        f"{WORKER}.metadata.labels",
    ),
    "annotations-as-string": (
        lambda job: _template(job).__setitem__("metadata", {"annotations": "a=b"}),
        f"{WORKER}.metadata.annotations",
    ),
    "args-as-string": (
        lambda job: _container(job).__setitem__("args", "--max_steps=10"),
        f"{CONTAINER}.args",
    ),
    "command-as-string": (
        lambda job: _container(job).__setitem__("command", "python -c pass"),
        f"{CONTAINER}.command",
    ),
    "terminationGracePeriodSeconds-x": (
        lambda job: _template(job)["spec"].__setitem__("terminationGracePeriodSeconds", "x"),
        f"{WORKER}.spec.terminationGracePeriodSeconds",
    ),
    "workingDir-5": (
        lambda job: _container(job).__setitem__("workingDir", 5),
        f"{CONTAINER}.workingDir",
    ),
}


@pytest.mark.parametrize("case", list(BAD_TEMPLATES), ids=list(BAD_TEMPLATES))
def test_a_malformed_template_is_refused_naming_the_field(tmp_path: Path, case: str) -> None:
    """Exit 2 with the field named (the CRD's own check, offline), before any replica runs."""
    mutate, field = BAD_TEMPLATES[case]
    job = copy.deepcopy(_ran_marker(tmp_path))
    mutate(job)
    err = one_error(run_taas("run", str(write(tmp_path, job)), "--no-color"))
    assert 'The TFJob "bad" is invalid:' in err
    assert f"* {field}" in err, err
    assert not (tmp_path / "ran").exists(), "a replica started despite the bad spec"


def _no_capabilities() -> list[str]:
    """A prefix that makes this test's root unable to write where its uid may not: setpriv
    with an empty bounding set (no CAP_DAC_OVERRIDE). Not needed for other users."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("as root, needs util-linux setpriv to drop CAP_DAC_OVERRIDE")
    return ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]


def test_logs_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "logs"
    file.write_text("not a directory")
    path = write(tmp_path, _ran_marker(tmp_path))
    err = one_error(run_taas("run", str(path), "--logs-dir", str(file)))
    assert f"--logs-dir {file}: not a directory; fix: give --logs-dir a directory" in err
    assert not (tmp_path / "ran").exists()


def test_logs_dir_that_cannot_be_written_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    path = write(tmp_path, _ran_marker(tmp_path))
    for target in (locked, locked / "logs"):  # existing but read-only, and not creatable
        done = subprocess.run(
            [*_no_capabilities(), *_taas_run(path), "--logs-dir", str(target)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        err = one_error(done)
        assert f"--logs-dir {target}: cannot write there (Permission denied)" in err
    assert not (tmp_path / "ran").exists()


def _taas_run(path: Path) -> list[str]:
    return [*TAAS, "run", str(path), "--no-color"]


# -- does the run fit this machine? ---------------------------------------------------------
def test_absurd_replica_counts_are_refused(tmp_path: Path) -> None:
    job = tfjob("huge", {"Worker": replica("pass", replicas=5000)})  # the most a TFJob may have
    err = one_error(run_taas("run", str(write(tmp_path, job))))
    assert "5000 replicas of TFJob huge do not fit this machine: memory: about " in err
    assert "(512 MiB each, what one TensorFlow replica takes)" in err
    assert "5000 processes on " in err and "per CPU" in err
    assert "taas run --allow-oversubscribe to start them anyway" in err


def test_memory_beyond_this_machine_is_refused_and_can_be_forced(tmp_path: Path) -> None:
    """requests.memory counts as the scheduler counts it; --allow-oversubscribe warns and runs."""
    resources = {"requests": {"memory": "100Ti"}}
    job = tfjob("greedy", {"Worker": replica("print('ran')", resources=resources)})
    path = str(write(tmp_path, job))
    err = one_error(run_taas("run", path))
    assert "1 replica of TFJob greedy does not fit this machine: memory: about 102400.0 GiB" in err
    assert "needed (their resources.requests.memory)" in err  # the request, not the estimate
    forced = run_taas("run", path, "--no-color", "--allow-oversubscribe")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert "taas: warning: 1 replica of TFJob greedy does not fit this machine" in forced.stdout
    assert "starting anyway (--allow-oversubscribe)" in forced.stdout
    assert "[worker-0] ran" in forced.stdout


def test_many_processes_per_cpu_are_a_warning(tmp_path: Path) -> None:
    cpus = len(os.sched_getaffinity(0))
    count = 2 * cpus + 1
    job = tfjob("crowd", {"Worker": replica("pass", replicas=count)})
    result = run_taas("run", str(write(tmp_path, job)), "--no-color", timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    expected = (
        f"taas: warning: {count} replicas of TFJob crowd: {count} processes on {cpus} CPU(s), "
        f"more than 2 per CPU: expect a slow start"
    )
    assert expected in result.stdout


# -- what is not applied, zero replicas, backoff -------------------------------------------
def test_what_is_not_applied_is_said_in_one_line(tmp_path: Path) -> None:
    spec = replica(
        "print('ran')",
        resources={"limits": {"nvidia.com/gpu": 1, "memory": "1Gi"}},
        volumeMounts=[{"name": "data", "mountPath": "/data"}],
        securityContext={"seccompProfile": {"type": "RuntimeDefault"}},
    )
    pod = spec["template"]["spec"]
    pod["initContainers"] = [{"name": "fetch", "image": "busybox", "command": ["true"]}]
    pod["containers"].append({"name": "sidecar", "image": "busybox", "command": ["sleep", "9"]})
    pod["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    pod["nodeSelector"] = {"pool": "gpu"}  # scheduling: meaningless here, not said
    result = run_taas("run", str(write(tmp_path, tfjob("extras", {"Worker": spec}))), "--no-color")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if "not applied on this machine" in line]
    assert lines == [
        "taas: warning: TFJob extras: not applied on this machine: Worker: initContainers (not "
        "run), volumes, resources (not enforced), nvidia.com/gpu (every GPU of this machine is "
        "visible), volumeMounts (paths are this machine's), securityContext.seccompProfile, "
        "container sidecar (not run)"
    ]
    assert "[worker-0] ran" in result.stdout


def test_a_job_without_replicas_succeeds_with_a_warning(tmp_path: Path) -> None:
    job = tfjob("empty", {"PS": replica("pass", replicas=0), "Worker": replica("pass", replicas=0)})
    result = run_taas("run", str(write(tmp_path, job)), "--no-color")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "taas: warning: TFJob empty has no replicas (replicas is 0 for every type): it succeeds "
        "at once without running anything, as Kubeflow's operator does; fix: set replicas to 1 "
        "or more"
    ) in result.stdout
    assert condition(final_status(result.stdout, "empty"), "Succeeded")["status"] == "True"


def test_after_backoff_limit_the_table_and_status_show_the_failure(tmp_path: Path) -> None:
    """OnFailure restarts in place (the pod stays Running); when the limit fails the job, the
    crash-looping replica is shown as it ended (Error, exit 1), and counted failed."""
    job = tfjob(
        "backoff",
        {
            "PS": replica("import time; time.sleep(60)"),
            "Worker": replica("import sys; sys.exit(1)", restart_policy="OnFailure"),
        },
        runPolicy={"backoffLimit": 2},
    )
    result = run_taas("run", str(write(tmp_path, job)), "--no-color", "--quiet-table")
    assert result.returncode == 1, result.stdout + result.stderr
    final_table = result.stdout.split("\n\n")[1].splitlines()
    worker = next(line.split() for line in final_table if line.startswith("backoff/worker-0"))
    assert worker[:5] == ["backoff/worker-0", "Error,", "deleted", "2", "1"], final_table
    assert "Running, deleted" not in result.stdout
    status = final_status(result.stdout, "backoff")
    assert status["replicaStatuses"]["Worker"] == {"active": 0, "succeeded": 0, "failed": 1}
    # The PS was running when the job failed and was stopped by it: active, as Kubeflow counts.
    assert status["replicaStatuses"]["PS"] == {"active": 1, "succeeded": 0, "failed": 0}
    assert "reached the specified backoff limit" in condition(status, "Failed")["message"]
