"""`taas submit` against the real node, and training progress read across the pod network.

The mnist example (trainer image, real TensorFlow) is submitted with `taas submit`, which follows
it to the end as `taas run` does. While it trains, the chart's operator reads the chief's
progress over the CNI bridge from its own pod, through the job's NetworkPolicy (enforced by
kube-router: the policy admits the operator's namespace to the progress port only), and writes
it into `status.progress`; the PROGRESS column then shows a percentage. The session's operator
reads progress every 5 s (conftest's `operator`) so a job of a few tens of seconds is read more
than once. `taas submit train.py` runs a local program the same way; its ConfigMap goes with the
job (the garbage collector follows its ownerReference).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from taas_controlplane.cluster.cluster import Cluster
from tests.harness.real_cluster import (
    REPO,
    condition,
    get_json,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node, pytest.mark.tensorflow, pytest.mark.slow]

TAAS = [sys.executable, "-m", "taas_operator.cli"]
STEPS = 4000  # long enough (tens of seconds on 2 cores) for several progress reads


def _job_file(tmp_path: Path) -> Path:
    """The async mnist example, renamed and training for `STEPS` steps."""
    job = yaml.safe_load((REPO / "examples" / "mnist" / "async.yaml").read_text())
    job["metadata"]["name"] = "mnist-progress"
    for spec in job["spec"]["tfReplicaSpecs"].values():
        for env in spec["template"]["spec"]["containers"][0].get("env", []):
            if env["name"] == "TF_MAX_STEPS":
                env["value"] = str(STEPS)
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


def test_taas_submit_follows_a_job_on_the_node_and_shows_its_progress(
    cluster: Cluster, operator: str, trainer_image: str, ns: str, tmp_path: Path
) -> None:
    cli = [*TAAS, "submit", str(_job_file(tmp_path)), "-n", ns, "--kubeconfig", cluster.kubeconfig]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=900)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "TFJob mnist-progress Succeeded" in out, out[-4000:]
    assert re.search(r"\[worker-0\].*test accuracy: 0\.9", out), out[-4000:]  # merged logs
    # the job row showed a percentage read from the chief while it trained
    assert re.search(r"mnist-progress\s+Running\s.*\b\d{1,3}%", out), out[-4000:]

    job = get_json(cluster, "-n", ns, "tfjob", "mnist-progress")
    assert (condition(job, "Succeeded") or {}).get("status") == "True", job.get("status")
    progress = job["status"].get("progress") or {}
    assert progress.get("maxSteps") == STEPS, job["status"]
    # asynchronous training: each of the 2 workers checks the global step before its update,
    # so the last one can take the step after the other reached STEPS (step STEPS + 1)
    assert 0 < progress.get("step", 0) <= STEPS + 1, progress
    assert progress.get("loss") is not None, progress

    listed = subprocess.run(
        [*TAAS, "get", "-n", ns, "--kubeconfig", cluster.kubeconfig],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"mnist-progress\s+Succeeded\s+2\s+1\s+\d{1,3}%", listed.stdout), listed.stdout


def test_taas_submit_runs_a_local_program_and_its_config_map_goes_with_the_job(
    cluster: Cluster, operator: str, trainer_image: str, ns: str, tmp_path: Path
) -> None:
    """`taas submit train.py`: the file in a ConfigMap, mounted in the trainer image's pods, run
    with TF_CONFIG as any job; deleting the TFJob makes the garbage collector delete the
    ConfigMap (its ownerReference)."""
    program = REPO / "examples" / "linear_regression" / "linear_regression.py"
    cli = [*TAAS, "submit", "-n", ns, "--kubeconfig", cluster.kubeconfig, str(program)]
    cli += ["--workers", "2", "--ps", "1", "--image", trainer_image, "--env", "TF_MAX_STEPS=200"]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=900)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "TFJob linear-regression Succeeded" in out, out[-4000:]
    assert re.search(r"\[worker-0\].*learned w=", out), out[-4000:]
    held = get_json(cluster, "-n", ns, "configmap", "linear-regression-program")
    job = get_json(cluster, "-n", ns, "tfjob", "linear-regression")
    assert held["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]

    cluster.kubectl("-n", ns, "delete", "tfjob", "linear-regression", "--wait=true")
    wait(
        lambda: (
            "NotFound"
            in cluster.kubectl(
                "-n", ns, "get", "configmap", "linear-regression-program", check=False
            ).stderr
        ),
        "the garbage collector to delete the program's ConfigMap",
        timeout=120.0,
        every=1.0,
    )
