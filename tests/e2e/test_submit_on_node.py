"""`taas submit` against the real node, and training progress read across the pod network.

The mnist example (trainer image, real TensorFlow) is submitted with `taas submit`, which follows
it to the end as `taas run` does. While it trains, the chart's operator reads the chief's
progress over the CNI bridge from its own pod, through the job's NetworkPolicy (enforced by
kube-router: the policy admits the operator's namespace to the progress port only), and writes
it into `status.progress`; the PROGRESS column then shows a percentage. The session's operator
reads progress every 5 s (conftest's `operator`) so a job of a few tens of seconds is read more
than once.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from node_helpers import REPO, condition, get_json

from taas_controlplane.cluster import Cluster

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
