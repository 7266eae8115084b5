"""The byte budget (issue 39): what one TFJob makes in etcd, estimated before any pod exists
from one pod and one service per replica type, never under the sum of every object the
planner would create; the 257-byte, 5,000-replica job of the probe refused at the default
limit, by the planner's check and by `taas validate` alike; an enableDynamicWorker job of
5,000 replicas (each pod lists the PS and itself, in TF_CONFIG and the host lists) within it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_operator.api import parse_tfjob
from taas_operator.api.constants import DEFAULT_MAX_JOB_BYTES
from taas_operator.cli import main
from taas_operator.planner import budget, desired_pods, desired_services
from taas_operator.planner.budget import (
    POD_STORED_EXTRA,
    SERVICE_STORED_EXTRA,
    job_bytes,
    over_budget,
)
from taas_operator.planner.objects import BuildOptions
from taas_operator.tfjob.cluster_spec import ClusterEnv, service_hosts

pytestmark = pytest.mark.fast

NAME = "a" * 40  # the probe's 40-character name


def _manifest(replicas: dict[str, int], dynamic: bool = False, name: str = NAME) -> dict[str, Any]:
    container = {"name": "tensorflow", "image": "example/train:1"}
    specs = {
        rtype: {"replicas": n, "template": {"spec": {"containers": [dict(container)]}}}
        for rtype, n in replicas.items()
    }
    spec: dict[str, Any] = {"tfReplicaSpecs": specs}
    if dynamic:
        spec["enableDynamicWorker"] = True
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": "team-a", "uid": "u-1"},
        "spec": spec,
    }


def _exact(job: Any) -> int:
    size = sum(len(json.dumps(p, separators=(",", ":")).encode()) for p in desired_pods(job))
    size += sum(len(json.dumps(s, separators=(",", ":")).encode()) for s in desired_services(job))
    return size


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("replicas", [{"PS": 3, "Worker": 120}, {"Chief": 1, "Worker": 9}])
def test_the_estimate_bounds_every_object_the_planner_makes(replicas, dynamic):
    job = parse_tfjob(_manifest(replicas, dynamic))
    size = job_bytes(job)
    count = sum(replicas.values())
    exact = _exact(job) + count * (POD_STORED_EXTRA + SERVICE_STORED_EXTRA)
    assert size.pod_count == count
    assert exact <= size.total <= exact * 1.01  # an upper bound, and a close one


def test_the_probes_small_job_of_5000_replicas_is_refused():
    job = parse_tfjob(_manifest({"Worker": 5000}))
    size = job_bytes(job)
    # TF_CONFIG and the host lists, each of 5,000 hosts of about 70 bytes: ~700 KB a pod
    assert 650_000 < size.largest_pod < 760_000
    assert size.total > 3 * 2**30
    refused = over_budget(job, DEFAULT_MAX_JOB_BYTES)
    assert refused is not None
    assert "5,000 pods" in refused and "over the limit of 256.0 MiB" in refused
    assert "fix:" in refused and "enableDynamicWorker" in refused
    assert over_budget(job, 0) is None  # 0: no limit


def test_a_dynamic_worker_job_of_5000_replicas_fits():
    """Each pod lists the PS and itself, in TF_CONFIG and in the classic host lists alike."""
    job = parse_tfjob(_manifest({"PS": 10, "Worker": 4990}, dynamic=True))
    assert over_budget(job, DEFAULT_MAX_JOB_BYTES) is None
    assert job_bytes(job).largest_pod < 8 * 1024
    env = {e["name"]: e["value"] for e in ClusterEnv(job, service_hosts(job)).env("Worker", 7)}
    assert env["WORKER_HOSTS"] == f"{NAME}-worker-7.team-a.svc:2222"
    assert len(env["PS_HOSTS"].split(",")) == 10
    assert json.loads(env["TF_CONFIG"])["cluster"]["worker"] == {"7": env["WORKER_HOSTS"]}


def test_the_estimate_builds_one_pod_per_replica_type(monkeypatch):
    built: list[int] = []
    real = budget.desired_pod

    def counted(*args: Any, **kwargs: Any) -> dict[str, Any]:
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(budget, "desired_pod", counted)
    job_bytes(parse_tfjob(_manifest({"PS": 20, "Worker": 4000})), BuildOptions())
    assert len(built) == 2


def test_taas_validate_prints_the_estimate_and_refuses_the_same_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small, big = tmp_path / "small.yaml", tmp_path / "big.yaml"
    small.write_text(yaml.safe_dump(_manifest({"Worker": 3}, name="small")))
    big.write_text(yaml.safe_dump(_manifest({"Worker": 5000})))
    assert main(["validate", str(small)]) == 0
    out = capsys.readouterr().out
    assert "3 pods and as many services of about" in out and "KiB in etcd (estimated" in out
    assert main(["validate", str(big)]) == 2
    err = capsys.readouterr().err
    assert "is too large: it would make 5,000 pods" in err and "fix:" in err
    assert main(["validate", "--max-job-bytes", "0", str(big)]) == 0
