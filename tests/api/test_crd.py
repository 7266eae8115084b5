"""The TFJob CRD on a real kube-apiserver + etcd: validation at `kubectl apply`, defaults stored,
Kubeflow's own example manifests accepted, printer columns, the engine's status accepted by
the status subresource, and the generator's cached input equal to what the apiserver serves.
Nothing is mocked (no pods run: none are needed here)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_controlplane.crd.generate import INPUT, fetch_input
from taas_operator.api import ProgressReport, TFJobValidationError, parse_tfjob
from taas_operator.planner import ObservedPod, fold_progress, plan_job
from tests.crds import install_crd
from tests.harness.api_cases import BAD, DIST_MNIST, KUBEFLOW_GUIDE, good

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml"


@pytest.fixture(scope="module")
def crd(control_plane: Any) -> Any:
    """The CRD installed and Established."""
    install_crd(control_plane, CRD)
    return control_plane


def _apply(plane: Any, namespace: str, obj: dict[str, Any] | str, verb: str = "apply") -> Any:
    text = obj if isinstance(obj, str) else json.dumps(obj)
    args = [verb, "-n", namespace, "-o", "json", "-f", "-"]
    return plane.kubectl(*args, input=text, check=False)


@pytest.mark.parametrize(("rule", "obj", "path", "message"), BAD, ids=[b[0] for b in BAD])
def test_kubectl_refuses_bad_spec_with_the_same_message(crd, namespace, rule, obj, path, message):
    result = _apply(crd, namespace, obj)
    assert result.returncode != 0, result.stdout
    lines = [line for line in result.stderr.splitlines() if f"{path}: " in line]
    assert any(message in line for line in lines), result.stderr
    # pydantic names the same field with the same words.
    with pytest.raises(TFJobValidationError) as info:
        parse_tfjob(obj)
    assert f"{path}: {message}" in [str(e) for e in info.value.errors]


def test_good_spec_is_stored_with_defaults(crd, namespace):
    result = _apply(crd, namespace, good())
    assert result.returncode == 0, result.stderr
    stored = json.loads(crd.kubectl("get", "tfjob", "good", "-n", namespace, "-o", "json").stdout)
    spec = stored["spec"]
    assert spec["tfReplicaSpecs"]["PS"]["replicas"] == 1
    assert spec["tfReplicaSpecs"]["PS"]["restartPolicy"] == "Never"
    assert spec["tfReplicaSpecs"]["Worker"]["restartPolicy"] == "Never"
    assert spec["runPolicy"] == {"cleanPodPolicy": "Running", "suspend": False}
    assert spec["successPolicy"] == ""
    # The stored object parses to the same model pydantic builds from the manifest alone.
    assert parse_tfjob(stored).spec == parse_tfjob(good()).spec


@pytest.mark.parametrize("text", [KUBEFLOW_GUIDE, DIST_MNIST], ids=["guide", "dist-mnist"])
def test_kubeflow_manifests_apply_unchanged(crd, namespace, text):
    result = _apply(crd, namespace, text, verb="create")
    assert result.returncode == 0, result.stderr
    stored = json.loads(result.stdout)
    job = parse_tfjob(stored)
    assert set(job.spec.tf_replica_specs) == {"PS", "Worker"}
    original = yaml.safe_load(text)["spec"]["tfReplicaSpecs"]
    for rtype, replica in original.items():
        assert stored["spec"]["tfReplicaSpecs"][rtype]["template"] == replica["template"]


def test_status_from_engine_is_accepted_and_shown_in_columns(crd, namespace):
    assert _apply(crd, namespace, good("cols")).returncode == 0
    stored = json.loads(crd.kubectl("get", "tfjob", "cols", "-n", namespace, "-o", "json").stdout)
    job = parse_tfjob(stored)
    pods = [
        ObservedPod(name="cols-ps-0", replica_type="PS", index=0, phase="Running"),
        ObservedPod(name="cols-worker-0", replica_type="Worker", index=0, phase="Running"),
    ]
    now = datetime.now(UTC)
    plan = plan_job(job, pods, now)
    report = ProgressReport(time=now.timestamp(), global_step=400, max_steps=1000, eta_seconds=95)
    fold_progress(job, plan, report, now, interval=30)  # status.progress passes the schema too
    stored["status"] = plan.status.to_dict()
    result = crd.kubectl(
        "replace", "--subresource=status", "-n", namespace, "-f", "-", "-o", "json",
        input=json.dumps(stored), check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    written = json.loads(result.stdout)["status"]
    assert written == plan.status.to_dict()
    table = crd.kubectl("get", "tfj", "cols", "-n", namespace).stdout.splitlines()
    header = ["NAME", "STATE", "REASON", "WORKERS", "PS", "PROGRESS", "ETA", "AGE"]
    assert table[0].split() == header
    assert table[1].split()[:6] == ["cols", "Running", "2", "1", "40%", "1m35s"]

    # A worker whose image cannot be pulled: kubectl says Waiting and why, never Running
    # (Kubeflow's condition list ends with Running False; its column showed "Running").
    job = parse_tfjob(json.loads(result.stdout))
    stuck = [pods[0], pods[1].model_copy(update={"waiting_reason": "ImagePullBackOff"})]
    plan = plan_job(job, stuck, now)
    stored = {**json.loads(result.stdout), "status": plan.status.to_dict()}
    crd.kubectl(
        "replace", "--subresource=status", "-n", namespace, "-f", "-", input=json.dumps(stored)
    )
    table = crd.kubectl("get", "tfj", "cols", "-n", namespace).stdout.splitlines()
    assert table[1].split()[:3] == ["cols", "Waiting", "ImagePullBackOff"]


def test_generation_input_is_what_the_apiserver_serves(control_plane):
    """The cached OpenAPI the CRD is generated from (tools/taas_controlplane/crd/core-v1.json)
    is exactly what this project's kube-apiserver serves: a Kubernetes version bump cannot
    leave the pod template's schema behind (`taas-controlplane crd --fetch` refreshes it)."""
    fresh = fetch_input(control_plane)
    assert fresh == json.loads(INPUT.read_text()), "run `taas-controlplane crd --fetch`"
