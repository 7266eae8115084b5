"""The repository's TFJobs on a real node, through the chart's operator and the trainer image:
real TensorFlow in containers, replicas that find each other by the service names in TF_CONFIG
(CoreDNS, through the pods' search path), the job Succeeded with no PS left running, the
chief's accuracy in its log; the seed-style example (flags filled by Kubernetes' own `$(VAR)`
expansion) and Kubeflow's documentation TFJob, unchanged but for the image."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from taas_controlplane.build.busybox_images import derived_archive
from taas_controlplane.build.images import ensure_image
from taas_controlplane.cluster.cluster import Cluster
from tests.harness.real_cluster import (
    REPO,
    condition,
    get_json,
    job_pods,
    wait_finished,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node, pytest.mark.tensorflow, pytest.mark.slow]

KATIB_IMAGE = "taas.local/tf-mnist-with-summaries:1"
KATIB_PROGRAM = Path(__file__).parent / "programs" / "tf_mnist_with_summaries.py"


def _tf_config(cluster: Cluster, ns: str, pod: str) -> dict:
    spec = get_json(cluster, "-n", ns, "pod", pod)["spec"]
    env = {e["name"]: e.get("value") for e in spec["containers"][0].get("env", [])}
    return dict(json.loads(env["TF_CONFIG"]))


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_mnist_example_trains_in_containers(
    cluster: Cluster, operator: str, trainer_image: str, ns: str, mode: str
) -> None:
    example = REPO / "examples" / "mnist" / f"{mode}.yaml"
    name = f"mnist-{mode}"
    assert trainer_image in example.read_text()  # the example runs as it is
    cluster.kubectl("apply", "-n", ns, "-f", str(example))
    wait(
        lambda: len(job_pods(cluster, ns, name)) == 3, "the job's 3 pods", timeout=120.0, every=1.0
    )
    hosts = _tf_config(cluster, ns, f"{name}-worker-0")["cluster"]
    assert hosts["ps"] == [f"{name}-ps-0.{ns}.svc:2222"]  # Kubeflow's host form, no domain
    job = wait_finished(cluster, ns, name, timeout=900)
    assert (condition(job, "Succeeded") or {}).get("status") == "True", job.get("status")
    # No PS is left running: the trainer's PS exits by itself once the workers are done, and
    # cleanPodPolicy Running removes it if it is still running when the job succeeds (that
    # case, made certain, is tests/e2e/test_clean_pod_policy.py).
    wait(
        lambda: all(
            p["status"].get("phase") != "Running"
            for p in job_pods(cluster, ns, name)
            if p["metadata"]["name"] == f"{name}-ps-0"
        ),
        "no PS pod left running",
        timeout=120.0,
        every=1.0,
    )
    log = cluster.kubectl("logs", "-n", ns, f"{name}-worker-0").stdout
    match = re.search(r"test accuracy: ([0-9.]+)", log)
    assert match and float(match.group(1)) > 0.9, log[-3000:]


def _names(cluster: Cluster, ns: str, job: str) -> list[str]:
    return [p["metadata"]["name"] for p in job_pods(cluster, ns, job)]


def test_seed_style_example_gets_its_flags_from_kubernetes_expansion(
    cluster: Cluster, operator: str, trainer_image: str, ns: str
) -> None:
    example = REPO / "examples" / "seed_style" / "job.yaml"
    cluster.kubectl("apply", "-n", ns, "-f", str(example))
    job = wait_finished(cluster, ns, "seed-style", timeout=600)
    assert (condition(job, "Succeeded") or {}).get("status") == "True", job.get("status")
    pod = get_json(cluster, "-n", ns, "pod", "seed-style-worker-0")
    assert "--ps_hosts=$(PS_HOSTS)" in pod["spec"]["containers"][0]["args"]  # expanded by kubelet
    log = cluster.kubectl("logs", "-n", ns, "seed-style-worker-0").stdout
    match = re.search(r"\[worker:0\] test accuracy: ([0-9.]+)", log)
    assert match and float(match.group(1)) > 0.8, log[-3000:]


def test_kubeflow_documentation_tfjob_runs_unchanged_but_for_the_image(
    cluster: Cluster, operator: str, trainer_image: str
) -> None:
    source = REPO / "manifests" / "examples" / "kubeflow-tfjob-simple.yaml"
    tfjob = yaml.safe_load(source.read_text())
    container = tfjob["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    # The guide's image cannot be pulled here: the trainer image plus the stand-in program at
    # the path the TFJob's command names (programs/tf_mnist_with_summaries.py says why).
    program = container["command"][1]
    archive = derived_archive(
        ensure_image("trainer").archive, KATIB_IMAGE, {program: KATIB_PROGRAM.read_bytes()}
    )
    cluster.load_image(archive)
    container["image"] = KATIB_IMAGE
    ns = tfjob["metadata"]["namespace"]
    cluster.kubectl("create", "namespace", ns)
    try:
        cluster.kubectl("apply", "-f", "-", input=json.dumps(tfjob))
        job = wait_finished(cluster, ns, "tfjob-simple", timeout=600)
        assert (condition(job, "Succeeded") or {}).get("status") == "True", job.get("status")
        # Worker 0 decides success (no chief); cleanPodPolicy Running (TaaS's default) may
        # remove worker 1 if it was still running then.
        log = cluster.kubectl("logs", "-n", ns, "tfjob-simple-worker-0").stdout
        assert "task worker:0" in log and "accuracy=" in log, log[-2000:]
    finally:
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
