"""The per-job NetworkPolicy, enforced by a real enforcer (kube-router's firewall on iptables
and ipsets): a pod outside the job cannot reach a replica's TF port; the job's own pods can."""

from __future__ import annotations

import pytest

from taas_controlplane.build.busybox_images import TOOLBOX_IMAGE
from taas_controlplane.cluster.cluster import Cluster
from tests.harness.real_cluster import (
    exec_in,
    get_json,
    toolbox_tfjob,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node]

# Every replica answers "ok from <name>" on its TF port (2222), one connection at a time.
SERVE = 'while true; do echo "ok from $HOSTNAME" | nc -l -p 2222; done'
STRANGER = f"""
apiVersion: v1
kind: Pod
metadata: {{name: stranger}}
spec:
  containers:
  - {{name: c, image: {TOOLBOX_IMAGE}, imagePullPolicy: Never, command: [sleep, "100000"]}}
"""


def _connect(cluster: Cluster, ns: str, pod: str, address: str) -> str:
    done = exec_in(cluster, ns, pod, f"nc -w 3 {address} 2222 </dev/null", check=False)
    return done.stdout + done.stderr


def _wait_running(cluster: Cluster, ns: str, pod: str) -> None:
    def made() -> bool:
        return cluster.kubectl("get", "-n", ns, "pod", pod, check=False).returncode == 0

    wait(
        made, f"pod {ns}/{pod} made", timeout=120.0, every=1.0
    )  # `kubectl wait` fails at once on a pod not made yet
    cluster.kubectl("wait", "-n", ns, "--for=condition=Ready", f"pod/{pod}", "--timeout=120s")


def test_only_the_jobs_own_pods_reach_its_tf_ports(
    cluster: Cluster, operator: str, ns: str
) -> None:
    cluster.kubectl(
        "apply", "-n", ns, "-f", "-", input=toolbox_tfjob("guarded", SERVE, {"PS": 1, "Worker": 1})
    )
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=STRANGER)
    other = f"{ns}-other"
    cluster.kubectl("create", "namespace", other)
    try:
        cluster.kubectl("apply", "-n", other, "-f", "-", input=STRANGER)
        for where, pod in [(ns, "guarded-ps-0"), (ns, "guarded-worker-0"), (ns, "stranger")]:
            _wait_running(cluster, where, pod)
        _wait_running(cluster, other, "stranger")
        policy = get_json(cluster, "-n", ns, "networkpolicy", "guarded")
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        ps_ip = get_json(cluster, "-n", ns, "pod", "guarded-ps-0")["status"]["podIP"]
        # The job's own worker reaches the PS (the listener may be between two connections).
        reached = wait(
            lambda: "ok from" in _connect(cluster, ns, "guarded-worker-0", ps_ip),
            "the worker reaching the PS",
            timeout=120.0,
            every=1.0,
        )
        assert reached
        # Strangers, in the job's namespace and in another, are turned away (kube-router REJECTs).
        for where in (ns, other):
            for _ in range(3):
                answer = _connect(cluster, where, "stranger", ps_ip)
                assert "ok from" not in answer, f"a pod in {where} reached the PS: {answer}"
                assert "refused" in answer or "timed out" in answer.lower(), answer
        # And the PS still answers its own job afterwards (nothing else broke it).
        assert "ok from guarded-ps-0" in _connect(cluster, ns, "guarded-worker-0", ps_ip)
    finally:
        cluster.kubectl("delete", "namespace", other, "--wait=false", check=False)
