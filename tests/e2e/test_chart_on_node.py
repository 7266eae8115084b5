"""The Helm chart on a real node: the operator image runs under the chart's ServiceAccount and
RBAC with its liveness probe passing; two replicas keep one active (kopf peering); uninstalling
leaves no operator pod and keeps the CRD (and so every TFJob)."""

from __future__ import annotations

import re
import uuid

import pytest

from taas_controlplane.cluster.cluster import Cluster
from tests.harness.real_cluster import (
    OPERATOR_NS,
    RELEASE,
    condition,
    get_json,
    helm,
    install_chart,
    operator_pods,
    toolbox_tfjob,
    wait_finished,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node, pytest.mark.chart_lifecycle]


def _probe_results(cluster: Cluster, pod: str) -> dict[str, float]:
    """The kubelet's own liveness-probe counters for `pod` (its /metrics/probes, via the API)."""
    raw = cluster.kubectl("get", "--raw", f"/api/v1/nodes/{cluster.node_name}/proxy/metrics/probes")
    results: dict[str, float] = {}
    for line in raw.stdout.splitlines():
        if line.startswith("prober_probe_total{") and f'pod="{pod}"' in line:
            result = line.split('result="')[1].split('"')[0]
            results[result] = results.get(result, 0.0) + float(line.rsplit(" ", 1)[1])
    return results


def _peering_active(log: str) -> bool:
    """kopf's last word on peering was "Resuming" (not "Pausing", and not nothing)."""
    return log.rfind("Resuming operations after the pause") > log.rfind("Pausing operations")


def _logs(cluster: Cluster, pod: str) -> str:
    return cluster.kubectl("logs", "-n", OPERATOR_NS, pod).stdout


def test_install_upgrade_to_two_replicas_and_uninstall(
    cluster: Cluster, operator_image: str, ns: str
) -> None:
    install_chart(cluster, "logLevel=DEBUG")
    deployment = get_json(cluster, "-n", OPERATOR_NS, "deployment", RELEASE)
    assert deployment["status"]["readyReplicas"] == 1
    (pod,) = operator_pods(cluster)
    name = pod["metadata"]["name"]
    assert pod["spec"]["serviceAccountName"] == RELEASE
    (container,) = pod["spec"]["containers"]
    assert container["image"] == operator_image
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["spec"]["securityContext"]["runAsUser"] == 65532
    probes = wait(
        lambda: _probe_results(cluster, name).get("successful"),
        "a successful liveness probe",
        timeout=120.0,
        every=1.0,
    )
    assert probes >= 1 and not _probe_results(cluster, name).get("failed")

    # The chart's RBAC is what the operator acts with: it runs a job, and reads no Secret.
    account = f"system:serviceaccount:{OPERATOR_NS}:{RELEASE}"
    can = cluster.kubectl("auth", "can-i", "--as", account, "create", "pods", "-n", ns)
    assert can.stdout.strip() == "yes"
    cannot = cluster.kubectl(
        "auth", "can-i", "--as", account, "get", "secrets", "-n", ns, check=False
    )
    assert cannot.stdout.strip() == "no"
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=toolbox_tfjob("one", "echo trained"))
    done = wait_finished(cluster, ns, "one", timeout=180)
    assert (condition(done, "Succeeded") or {}).get("status") == "True"
    assert "trained" in cluster.kubectl("logs", "-n", ns, "one-worker-0").stdout

    install_chart(cluster, "logLevel=DEBUG", "replicaCount=2")

    def upgraded() -> list[str] | None:
        """The two pods of the upgraded release, once the first one is gone."""
        now = [p["metadata"]["name"] for p in operator_pods(cluster)]
        return now if len(now) == 2 and name not in now else None

    names = wait(upgraded, "two operator pods, the old one gone", timeout=180, every=1.0)

    def one_active() -> list[str] | None:
        """Only the replica of the highest peering priority works (kopf's rule)."""
        logs = {n: _logs(cluster, n) for n in names}
        priorities = {
            n: re.search(r"peering '\S+' \(priority (\d+)\)", log) for n, log in logs.items()
        }
        if not all(priorities.values()):
            return None
        top = max(names, key=lambda n: int(priorities[n].group(1)))  # type: ignore[union-attr]
        active = [n for n in names if _peering_active(logs[n])]
        return active if active == [top] else None

    active = wait(one_active, "exactly one active operator replica", timeout=120, every=1.0)
    job = f"two-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=toolbox_tfjob(job, "echo trained"))
    wait_finished(cluster, ns, job, timeout=180)
    reconciled = [n for n in names if f"reconciling {ns}/{job}" in _logs(cluster, n)]
    assert reconciled == active

    helm(cluster, "uninstall", RELEASE, "--namespace", OPERATOR_NS, "--wait", "--timeout", "180s")
    wait(
        lambda: not get_json(cluster, "pods", "-n", OPERATOR_NS)["items"],
        "no operator pod",
        timeout=120.0,
        every=1.0,
    )
    assert cluster.kubectl("get", "crd", "tfjobs.kubeflow.org", check=False).returncode == 0
    kept = get_json(cluster, "-n", ns, "tfjobs")["items"]
    assert sorted(j["metadata"]["name"] for j in kept) == sorted(["one", job])
