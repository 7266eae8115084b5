"""`taas validate --server`: the cluster's dry run of the TFJob and of the pod each replica type
would get, on a real kube-apiserver with the CRD: what only pod admission refuses (Pod Security
Admission here) is said before anything is applied, and nothing is stored."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.crds import install_crd

pytestmark = pytest.mark.controlplane

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml"


def _job(name: str, namespace: str) -> dict[str, Any]:
    container = {"name": "tensorflow", "image": "example/train:1", "command": ["python"]}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [container]}}}}},
    }


def _validate(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "taas_operator.cli", "validate", str(path), *extra],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_cluster_refuses_what_only_pod_admission_sees(
    control_plane: Any, tmp_path: Path
) -> None:
    install_crd(control_plane, CRD)
    ns = f"strict-{uuid.uuid4().hex[:6]}"
    control_plane.kubectl("create", "namespace", ns)
    control_plane.kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(_job("strict", ns)))
    offline = _validate(job)
    assert offline.returncode == 0, offline.stderr  # kubectl apply would take it
    server = _validate(job, "--server", "--kubeconfig", control_plane.kubeconfig)
    assert server.returncode == 2, server.stdout + server.stderr
    assert "Traceback" not in server.stderr
    assert "the cluster refuses it (dry run)" in server.stderr
    assert "the Worker pods (from spec.tfReplicaSpecs.Worker.template)" in server.stderr
    assert 'violates PodSecurity "restricted:latest"' in server.stderr
    # A dry run stores nothing.
    listed = control_plane.kubectl("get", "tfjobs,pods", "-n", ns, "-o", "name").stdout
    assert listed.strip() == ""
    # The same job where the namespace allows it: both answers agree.
    control_plane.kubectl("create", "namespace", f"{ns}-open")
    job.write_text(yaml.safe_dump(_job("open", f"{ns}-open")))
    fine = _validate(job, "--server", "--kubeconfig", control_plane.kubeconfig)
    assert fine.returncode == 0, fine.stderr
    assert "the cluster's dry run of the TFJob and its pods agrees" in fine.stdout


def test_server_needs_a_cluster(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(_job("x", "default")))
    missing = _validate(job, "--server", "--kubeconfig", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.startswith("error: --server: ") and "does not exist" in missing.stderr
