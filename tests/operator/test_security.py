"""Issue 6, operator side: the NetworkPolicy per TFJob, least privilege proven by running the
operator under the chart's ServiceAccount identity (RBAC from manifests/install.yaml, rendered
from charts/taas), a missing RBAC verb caught and named, /healthz (on 127.0.0.1 unless told).

Real RBAC on the real apiserver. The identity is a client certificate carrying the
ServiceAccount's user name and groups (no token controller runs here); RBAC treats it exactly as
the ServiceAccount. No kubelet: tests write pod status through the pods/status subresource.
"""

from __future__ import annotations

import copy
import json
import signal
import socket
import struct
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.processes import free_ports
from tests.harness.operator_run import (
    POLICIES,
    Api,
    StartOperator,
    condition,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(150)]

INSTALL = Path(__file__).resolve().parents[2] / "manifests" / "install.yaml"
SA_NAMESPACE = "taas-system"
SA_GROUPS = ["system:serviceaccounts", f"system:serviceaccounts:{SA_NAMESPACE}"]
RBAC_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role")
JOB_NAME = "training.kubeflow.org/job-name"
OPERATOR_LABEL = {"training.kubeflow.org/operator-name": "tfjob-controller"}


def _install_docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(INSTALL.read_text()) if d]


def _apply(control_plane: ControlPlane, docs: list[dict[str, Any]]) -> None:
    control_plane.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", input=yaml.safe_dump_all(docs)
    )


@pytest.fixture(scope="module")
def chart_rbac(control_plane: ControlPlane) -> list[dict[str, Any]]:
    """The install manifest's namespace, ServiceAccount and RBAC, applied."""
    docs = [d for d in _install_docs() if d["kind"] in RBAC_KINDS]
    assert {d["kind"] for d in docs} >= {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"}
    _apply(control_plane, docs)
    return docs


def _service_account(docs: list[dict[str, Any]]) -> str:
    sa = next(d for d in docs if d["kind"] == "ServiceAccount")
    return f"system:serviceaccount:{sa['metadata']['namespace']}:{sa['metadata']['name']}"


def test_network_policy_selectors_and_repair(admin: Api, start_operator: StartOperator) -> None:
    ns = new_namespace(admin, "np")
    start_operator(ns, args=("--network-policy-namespace", "monitoring"))
    name = unique("np")
    containers = [
        {
            "name": "tensorflow",
            "image": "example.com/t:1",
            "ports": [{"name": "tfjob-port", "containerPort": 2222}],
        },
        {"name": "board", "image": "example.com/tb:1", "ports": [{"containerPort": 6006}]},
    ]
    admin.create_tfjob(ns, tfjob(name, {"PS": {}, "Worker": {"containers": containers}}))
    policy = wait(lambda: admin.policies(ns, name).get(name), "the NetworkPolicy")
    job = admin.tfjob(ns, name)
    assert policy["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert policy["metadata"]["ownerReferences"][0]["controller"] is True
    spec = policy["spec"]
    assert spec["podSelector"] == {"matchLabels": {**OPERATOR_LABEL, JOB_NAME: name}}
    assert spec["policyTypes"] == ["Ingress"]
    tf_rule, other_rule = spec["ingress"]
    assert tf_rule["ports"] == [{"protocol": "TCP", "port": 2222}]
    uid = job["metadata"]["uid"]
    assert tf_rule["from"] == [
        # this incarnation's pods, and pods older than the uid label (an operator upgrade)
        {"podSelector": {"matchLabels": {JOB_NAME: name, "taas.dev/job-uid": uid}}},
        {
            "podSelector": {
                "matchLabels": {JOB_NAME: name},
                "matchExpressions": [{"key": "taas.dev/job-uid", "operator": "DoesNotExist"}],
            }
        },
        {
            "namespaceSelector": {
                "matchExpressions": [
                    {
                        "key": "kubernetes.io/metadata.name",
                        "operator": "In",
                        "values": ["monitoring"],
                    }
                ]
            }
        },
    ]
    # A port the job declares besides TensorFlow's stays reachable (no `from`: anyone).
    assert other_rule == {"ports": [{"protocol": "TCP", "port": 6006}]}
    # Someone opens the policy up: the operator puts its spec back.
    path = f"{POLICIES.format(ns=ns)}/{name}"
    admin.call(
        "PATCH",
        path,
        [{"op": "replace", "path": "/spec/ingress", "value": [{}]}],
        "application/json-patch+json",
    )
    wait(lambda: admin.get(path)["spec"] == spec, "the NetworkPolicy repaired")


def test_no_network_policy_flag(admin: Api, start_operator: StartOperator) -> None:
    ns = new_namespace(admin, "nonp")
    start_operator(ns, args=("--no-network-policy",))
    name = unique("nonp")
    admin.create_tfjob(ns, tfjob(name, {"Worker": {"replicas": 2}}))
    wait(lambda: len(admin.services(ns, name)) == 2, "services (the pass is done)")
    assert not admin.policies(ns, name)


def test_lifecycle_under_the_chart_service_account(
    admin: Api,
    control_plane: ControlPlane,
    chart_rbac: list[dict[str, Any]],
    start_operator: StartOperator,
) -> None:
    """The chart's RBAC is enough for a whole lifecycle, TTL deletion and /healthz included."""
    ns = new_namespace(admin, "sa")
    identity = _service_account(chart_rbac)
    kubeconfig = control_plane.kubeconfig_for(identity, SA_GROUPS)
    # The identity really is limited: it may not read secrets.
    with pytest.raises(RuntimeError, match="HTTP 403"):
        Api(kubeconfig).get(f"/api/v1/namespaces/{ns}/secrets")
    (port,) = free_ports(1)
    operator = start_operator(ns, kubeconfig=kubeconfig, args=(f"--health-port={port}",))
    name = unique("sa")
    manifest = tfjob(name, {"PS": {}, "Worker": {}}, runPolicy={"ttlSecondsAfterFinished": 1})
    admin.create_tfjob(ns, manifest)
    pods = wait(lambda: len(p := admin.pods(ns, name)) == 2 and p, "2 pods")
    wait(lambda: len(admin.services(ns, name)) == 2, "2 services")
    wait(lambda: admin.policies(ns, name), "the NetworkPolicy")
    for pod in pods:
        admin.set_pod_phase(ns, pod, "Running")
    wait(lambda: condition(admin.tfjob(ns, name), "Running"), "Running")
    admin.set_pod_phase(ns, f"{name}-worker-0", "Succeeded")
    wait(lambda: admin.tfjob(ns, name) is None, "Succeeded, then deleted by its TTL")
    assert not admin.pods(ns, name) and not admin.services(ns, name)
    assert not admin.policies(ns, name)
    reasons = {e["reason"] for e in admin.events(ns, name)}
    assert {"TFJobCreated", "TFJobRunning", "TFJobSucceeded"} <= reasons
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
        assert response.status == 200
        json.loads(response.read())
    log = operator.log()
    assert not any(s in log for s in ("HTTP 403", "the operator may not", "ForbiddenError")), log[
        -3000:
    ]


def _listen_addresses(pid: int, port: int) -> set[str]:
    """IPv4 addresses process `pid` listens on at `port` (its /proc/net/tcp, LISTEN rows)."""
    found = set()
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:  # TCP_LISTEN
            found.add(socket.inet_ntoa(struct.pack("<I", int(address, 16))))
    return found


def test_health_endpoint_listens_on_localhost_unless_told(
    admin: Api, start_operator: StartOperator
) -> None:
    """`taas operator` serves /healthz on 127.0.0.1 only (nothing off the machine can reach
    it); --health-host (the chart passes the pod's IP) moves it, e.g. to every interface."""
    for host, expected in (("", "127.0.0.1"), ("0.0.0.0", "0.0.0.0")):
        (port,) = free_ports(1)
        args = (f"--health-port={port}", *([f"--health-host={host}"] if host else []))
        operator = start_operator(new_namespace(admin, "health"), args=args)
        assert operator.proc is not None
        pid = operator.proc.pid
        wait(lambda p=pid, q=port: _listen_addresses(p, q), "/healthz to listen")
        assert _listen_addresses(pid, port) == {expected}
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            assert response.status == 200
        operator.kill(signal.SIGTERM)


def test_missing_verb_is_named_and_survived(
    admin: Api,
    control_plane: ControlPlane,
    chart_rbac: list[dict[str, Any]],
    start_operator: StartOperator,
) -> None:
    """The chart's role minus `create` on services: 403 named in the log and in an event."""
    role = copy.deepcopy(
        next(d for d in chart_rbac if d["kind"] == "ClusterRole" and _is_workload(d))
    )
    for rule in role["rules"]:
        if rule["resources"] == ["services"]:
            rule["verbs"] = [v for v in rule["verbs"] if v != "create"]
    role["metadata"] = {"name": "taas-test-no-service-create"}
    user = f"system:serviceaccount:{SA_NAMESPACE}:taas-no-service-create"
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "taas-test-no-service-create"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role["metadata"]["name"],
        },
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}],
    }
    cluster_binding = copy.deepcopy(
        next(
            d
            for d in chart_rbac
            if d["kind"] == "ClusterRoleBinding" and d["metadata"]["name"].endswith("-cluster")
        )
    )
    cluster_binding["metadata"] = {"name": "taas-test-no-service-create-cluster"}
    cluster_binding["subjects"] = binding["subjects"]
    _apply(control_plane, [role, binding, cluster_binding])
    ns = new_namespace(admin, "rbac")
    operator = start_operator(ns, kubeconfig=control_plane.kubeconfig_for(user, SA_GROUPS))
    name = unique("rbac")
    admin.create_tfjob(ns, tfjob(name, {"PS": {}, "Worker": {}}))
    wait(lambda: len(admin.pods(ns, name)) == 2, "pods still created")
    wait(
        lambda: "forbidden: the operator may not create services" in operator.log(),
        "the 403 in the operator log",
    )
    events = wait(
        lambda: [e for e in admin.events(ns, name) if e["reason"] == "FailedCreateService"],
        "FailedCreateService events",
    )
    assert events[0]["type"] == "Warning"
    assert "grant the verb 'create' on services" in events[0]["message"]
    # Retried with backoff (1 s, 2 s, ...) but neither crashing nor repeating the event.
    wait(lambda: operator.log().count("retry in") >= 2, "two retries", timeout=15)
    assert operator.alive()
    posted = [e for e in admin.events(ns, name) if e["reason"] == "FailedCreateService"]
    assert len(posted) == 2  # one per service, not one per retry
    assert not admin.services(ns, name)


def _is_workload(role: dict[str, Any]) -> bool:
    return any("pods" in rule.get("resources", []) for rule in role["rules"])
