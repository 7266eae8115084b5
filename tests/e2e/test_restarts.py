"""Restarts the way a kubelet does them: OnFailure restarts a container in place (restartCount,
the Restarting condition), ExitCode recreates a worker killed with SIGKILL (137) and the job
still succeeds, the new chief resuming from the checkpoint on a volume all replicas share, and
backoffLimit ends a crash loop."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
import yaml

from taas_controlplane.cluster.cluster import Cluster
from tests.harness.real_cluster import (
    REPO,
    await_resumed_step,
    condition,
    get_json,
    kill_container_and_await_replacement,
    toolbox_tfjob,
    wait_finished,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node]


def _events(cluster: Cluster, ns: str, reason: str) -> list[str]:
    events = get_json(cluster, "-n", ns, "events", "--field-selector", f"reason={reason}")
    return [e["message"] for e in events["items"]]


def test_on_failure_restarts_in_place(cluster: Cluster, operator: str, ns: str) -> None:
    # Fails three times (the later restarts wait out the kubelet's back-off, 10 s then 20 s, in
    # CrashLoopBackOff), then succeeds.
    script = (
        "n=$(cat /scratch/n 2>/dev/null || echo 0); echo $((n + 1)) > /scratch/n; "
        'if [ "$n" -lt 3 ]; then echo "run $n fails"; exit 3; fi; echo "run $n done"'
    )
    cluster.kubectl(
        "apply",
        "-n",
        ns,
        "-f",
        "-",
        input=toolbox_tfjob("flaky", script, restart_policy="OnFailure"),
    )
    first = wait(
        lambda: get_json(cluster, "-n", ns, "pods")["items"],
        "the worker pod",
        timeout=120.0,
        every=1.0,
    )[0]
    seen: set[str] = set()

    def finished() -> dict | None:
        job = get_json(cluster, "-n", ns, "tfjob", "flaky")
        seen.update(c["type"] for c in job["status"].get("conditions", []) if c["status"] == "True")
        return job if "Succeeded" in seen or "Failed" in seen else None

    job = wait(finished, "the job to finish", timeout=240, every=0.5)
    assert (condition(job, "Succeeded") or {}).get("status") == "True", job["status"]
    restarting = _events(cluster, ns, "TFJobRestarting")
    assert any("flaky-worker-0" in m and "restarted in place" in m for m in restarting), restarting
    assert "Restarting" in seen, seen
    pod = get_json(cluster, "-n", ns, "pod", "flaky-worker-0")
    assert pod["metadata"]["uid"] == first["metadata"]["uid"]  # the same pod, restarted
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 3
    assert not job["status"].get("recreations")


def test_backoff_limit_stops_a_crash_loop(cluster: Cluster, operator: str, ns: str) -> None:
    manifest = toolbox_tfjob(
        "crashing", "echo crashing; exit 1", restart_policy="OnFailure",
        run_policy={"backoffLimit": 2},
    )  # fmt: skip
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest)
    job = wait_finished(cluster, ns, "crashing", timeout=240)
    failed = condition(job, "Failed") or {}
    assert failed.get("status") == "True", job["status"]
    assert "reached the specified backoff limit" in failed["message"]
    assert "crashing-worker-0" in failed["message"] and "exit code 1" in failed["message"]
    wait(
        lambda: not get_json(cluster, "-n", ns, "pods")["items"],
        "the crash-looping pod removed",
        timeout=120.0,
        every=1.0,
    )


@pytest.mark.tensorflow
@pytest.mark.slow
def test_exit_code_recreates_a_killed_chief_which_resumes_from_the_checkpoint(
    cluster: Cluster, operator: str, trainer_image: str, ns: str
) -> None:
    tfjob = yaml.safe_load((REPO / "examples" / "mnist" / "async.yaml").read_text())
    name = tfjob["metadata"]["name"] = f"resume-{uuid.uuid4().hex[:6]}"
    # The model dir on a volume every replica shares (one node: a hostPath), more steps and
    # frequent checkpoints, so the chief is killed mid-training with a checkpoint behind it.
    shared = cluster.directory / "shared" / name
    shared.mkdir(parents=True)
    shared.chmod(0o777)  # the trainer runs as uid 1000
    for spec in tfjob["spec"]["tfReplicaSpecs"].values():
        pod = spec["template"]["spec"]
        pod["volumes"] = [{"name": "model", "hostPath": {"path": str(shared), "type": "Directory"}}]
        container = pod["containers"][0]
        container["volumeMounts"] = [{"name": "model", "mountPath": "/model"}]
        env = {e["name"]: e for e in container["env"]}
        env["TF_LOGDIR"] = {"name": "TF_LOGDIR", "value": "/model"}
        env["TF_MAX_STEPS"] = {"name": "TF_MAX_STEPS", "value": "3000"}
        env["TAAS_SAVE_CHECKPOINTS_SECS"] = {"name": "TAAS_SAVE_CHECKPOINTS_SECS", "value": "2"}
        container["env"] = list(env.values())
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(tfjob))
    chief = f"{name}-worker-0"
    wait(
        lambda: _checkpoint_step(shared),
        "a checkpoint in the shared model dir",
        timeout=600,
        every=1.0,
    )
    kill_container_and_await_replacement(cluster, ns, chief, timeout=300)
    assert await_resumed_step(cluster, ns, chief, timeout=300) > 0
    job = wait_finished(cluster, ns, name, timeout=900)
    assert (condition(job, "Succeeded") or {}).get("status") == "True", job["status"]
    recreation = job["status"]["recreations"][chief]
    assert recreation["count"] == 1 and recreation["lastExitCode"] == 137, recreation
    # one event per pass: the exit, then what the pass did about it ("Deleted pod: ...")
    exited = _events(cluster, ns, "ExitedWithCode")
    assert any(m.startswith(f"Pod: {ns}.{chief} exited with code 137") for m in exited), exited
    assert "test accuracy" in cluster.kubectl("logs", "-n", ns, chief).stdout


def _checkpoint_step(directory: Path) -> int:
    index = directory / "checkpoint"
    match = (
        re.search(r'model_checkpoint_path: ".*-(\d+)"', index.read_text())
        if index.exists()
        else None
    )
    return int(match.group(1)) if match and int(match.group(1)) > 0 else 0
