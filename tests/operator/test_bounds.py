"""Issue 29, point 1: a huge replica count no longer takes the operator down for everyone.

- A TFJob stored without the CRD's bound (made under a CRD that lacked it) is failed at the
  operator's first pass, with a condition and a Warning event naming the field and the fix,
  and no pod or service is made.
- One TFJob of 5,000 replicas keeps the operator within the chart's memory limit: its pods are
  built in batches, so the operator's memory grows linearly with the replicas (it grew with
  their square: 6,000 replicas took 1.15 GiB; this test stops the old code past 512 MiB
  within seconds).

Real apiserver, the operator as a subprocess, no kubelet (pods stay Pending). The 5,000-replica
job runs under a ResourceQuota of a few hundred pods: its pods name 5,000 hosts each (about
390 KB), and all 5,000 would put some 2 GB into the test's etcd, more than its default quota;
the quota refuses the rest, as a tenant's quota would (and the job says so). The passes that
build the missing pods and services, the job's status and the refusals run at full size.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.api import messages
from taas_operator.api.quantity import parse_quantity
from taas_operator.processes import stop
from tests.harness.operator_run import (
    Api,
    StartOperator,
    condition,
    new_namespace,
    tfjob,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml"
VALUES = ROOT / "charts" / "taas" / "values.yaml"
QUOTAS = "/api/v1/namespaces/{ns}/resourcequotas"
#: Pods the 5,000-replica job may make (about 120 MB in etcd).
POD_QUOTA = 300


def _chart_memory_limit() -> int:
    values = yaml.safe_load(VALUES.read_text())
    limit = parse_quantity(values["resources"]["limits"]["memory"])
    assert limit is not None
    return int(limit)


def _without_the_bound(crd: dict[str, Any]) -> dict[str, Any]:
    """The CRD as it was before issue 29: no rule on the number of replicas."""
    crd = copy.deepcopy(crd)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    specs = schema["properties"]["spec"]["properties"]["tfReplicaSpecs"]
    replicas = specs["additionalProperties"]["properties"]["replicas"]
    for node in (specs, replicas):
        node["x-kubernetes-validations"] = [
            r for r in node["x-kubernetes-validations"] if "5000" not in r["rule"]
        ]
    return crd


def _apply(control_plane: ControlPlane, crd: dict[str, Any]) -> None:
    control_plane.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", input=yaml.safe_dump(crd)
    )


@pytest.fixture
def stored_without_the_bound(control_plane: ControlPlane, admin: Api) -> Any:
    """`store(ns, manifest)`: create a TFJob under the CRD without the bound (put back after)."""
    current = yaml.safe_load(CRD.read_text())

    def store(ns: str, manifest: dict[str, Any]) -> None:
        _apply(control_plane, _without_the_bound(current))
        try:
            wait(lambda: _created(admin, ns, manifest), "the old CRD to take the job", timeout=30)
        finally:
            _apply(control_plane, current)

    yield store
    _apply(control_plane, current)


def _created(admin: Api, ns: str, manifest: dict[str, Any]) -> bool:
    try:
        admin.create_tfjob(ns, manifest)
    except RuntimeError as err:
        if "must be at most 5000" in str(err):  # the new rules are still being served
            return False
        raise
    return True


def test_a_job_stored_without_the_bound_fails_at_once(
    admin: Api, start_operator: StartOperator, stored_without_the_bound: Any
) -> None:
    ns = new_namespace(admin, "bounds")
    job = tfjob("huge", {"Worker": {"replicas": 2**31 - 1}, "PS": {"replicas": 1}})
    stored_without_the_bound(ns, job)
    operator = start_operator(ns)
    failed = wait(lambda: condition(admin.tfjob(ns, "huge"), "Failed"), "Failed", timeout=60)
    assert failed["reason"] == "InvalidTFJobSpec"
    field = "spec.tfReplicaSpecs[Worker].replicas: " + messages.TOO_MANY_REPLICAS
    assert field in failed["message"]
    events = wait(
        lambda: [e for e in admin.events(ns, "huge") if e["reason"] == "InvalidTFJobSpec"],
        "the Warning event",
    )
    assert events[0]["type"] == "Warning" and field in events[0]["message"]
    assert "fix: set replicas to at most 5000" in events[0]["message"]
    time.sleep(2)  # a later pass would still find nothing to make
    assert admin.pods(ns, "huge") == {} and admin.services(ns, "huge") == {}
    assert operator.alive()


def _status_kib(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def _quota(admin: Api, ns: str, pods: int) -> None:
    """A pod quota the apiserver enforces at once (no quota controller runs here: its status,
    which admission counts from, is written by hand)."""
    path = QUOTAS.format(ns=ns)
    hard = {"pods": str(pods)}
    admin.create(path, {"metadata": {"name": "pods"}, "spec": {"hard": hard}})
    admin.call(
        "PUT",
        f"{path}/pods/status",
        {**admin.get(f"{path}/pods"), "status": {"hard": hard, "used": {"pods": "0"}}},
    )


def test_a_5000_replica_job_stays_within_the_charts_memory_limit(
    admin: Api, start_operator: StartOperator
) -> None:
    limit_kib = _chart_memory_limit() // 1024
    ns = new_namespace(admin, "b5k")
    _quota(admin, ns, POD_QUOTA)
    # the byte budget would refuse this job (3.4 GiB of dense TF_CONFIG, tests/core/test_budget):
    # off, so that the operator's memory is what is measured
    operator = start_operator(ns, args=("--max-job-bytes=0",))
    assert operator.proc is not None
    pid = operator.proc.pid
    time.sleep(2)  # settled after the login
    idle = _status_kib(pid)["VmRSS"]
    admin.create_tfjob(ns, tfjob("big", {"Worker": {"replicas": 5000}}))

    quota = f"the ResourceQuota of namespace {ns} refused to create pods: "

    def refused() -> list[dict[str, Any]]:
        return [e for e in admin.events(ns, "big") if quota in e["message"]]

    def progressed() -> tuple[int, int] | None:
        """(pods, services) once the quota's pods exist and a creation past it was refused;
        the operator's memory is read ten times a second meanwhile."""
        for _ in range(5):
            peak = _status_kib(pid)["VmRSS"]
            if peak > limit_kib:  # stop it before it takes the machine's memory
                stop(operator.proc, grace=1)
                raise AssertionError(f"the operator passed {limit_kib} KiB: {peak} KiB")
            time.sleep(0.1)
        used = (admin.get(f"{QUOTAS.format(ns=ns)}/pods").get("status") or {}).get("used") or {}
        services = admin.get(f"/api/v1/namespaces/{ns}/services?limit=1")
        made = len(services["items"]) + int(services["metadata"].get("remainingItemCount") or 0)
        pods = int(parse_quantity(used.get("pods", 0)) or 0)  # a quantity: 1000 is "1k"
        return (pods, made) if pods >= POD_QUOTA and refused() else None

    pods, services = wait(progressed, "the quota's pods", timeout=240, every=0)
    for _ in range(10):  # passes go on (with backoff): more services, more refusals
        progressed()
    high = _status_kib(pid)["VmHWM"]
    assert operator.alive()
    assert high < limit_kib, (idle, high, limit_kib)
    assert "exceeded quota" in refused()[0]["message"]
    assert pods == POD_QUOTA and services >= 1000, (pods, services)
    print(f"operator RSS: idle {idle // 1024} MiB, peak {high // 1024} MiB; {services} services")
