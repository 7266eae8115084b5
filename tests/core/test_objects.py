"""Desired pods, services and NetworkPolicy of a TFJob (pure builders)."""

from __future__ import annotations

from taas_operator.api import parse_tfjob
from taas_operator.planner import (
    desired_network_policy,
    desired_pod,
    desired_pods,
    desired_service,
    desired_services,
)

from .helpers import job, manifest

LABELS = "training.kubeflow.org/"


def test_pod_names_labels_owner_and_restart_policy():
    m = manifest({"PS": 1, "Worker": 2}, restart_policy="ExitCode")
    m["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "labels": {"team": "ml", LABELS + "job-name": "spoofed"},
        "annotations": {"sidecar.istio.io/inject": "false"},
    }
    pods = desired_pods(parse_tfjob(m))
    assert [p["metadata"]["name"] for p in pods] == [
        "mnist-ps-0",
        "mnist-worker-0",
        "mnist-worker-1",
    ]
    w0 = pods[1]
    assert w0["metadata"]["namespace"] == "ns1"
    assert w0["metadata"]["labels"] == {
        "team": "ml",
        LABELS + "operator-name": "tfjob-controller",
        LABELS + "job-name": "mnist",
        LABELS + "replica-type": "worker",
        LABELS + "replica-index": "0",
        LABELS + "job-role": "master",
        "taas.dev/job-uid": "uid-1",  # this incarnation's pods only (issue 24)
    }
    assert w0["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    assert LABELS + "job-role" not in pods[2]["metadata"]["labels"]
    assert LABELS + "job-role" not in pods[0]["metadata"]["labels"]
    assert w0["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "name": "mnist",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert w0["spec"]["restartPolicy"] == "Never"  # ExitCode -> Never
    container = w0["spec"]["containers"][0]
    # Worker 0 is the chief here: it also declares the port the operator reads progress from.
    assert container["ports"] == [
        {"name": "tfjob-port", "containerPort": 2222},
        {"name": "taas-progress", "containerPort": 2223},
    ]
    others = [p["spec"]["containers"][0]["ports"] for p in pods if p is not w0]
    assert all(ports == [{"name": "tfjob-port", "containerPort": 2222}] for ports in others)


def test_job_role_goes_to_chief_when_present():
    tfjob = job({"Chief": 1, "Worker": 1}, restart_policy="OnFailure")
    chief, worker = desired_pod(tfjob, "Chief", 0), desired_pod(tfjob, "Worker", 0)
    assert chief["metadata"]["labels"][LABELS + "job-role"] == "master"
    assert LABELS + "job-role" not in worker["metadata"]["labels"]
    assert chief["spec"]["restartPolicy"] == "OnFailure"


def test_env_goes_first_and_replaces_user_entries_of_the_same_name():
    m = manifest({"PS": 1, "Worker": 1})
    m["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = [
        {"name": "sidecar", "image": "busybox"},
        {
            "name": "tensorflow",
            "image": "x",
            "env": [{"name": "TASK_INDEX", "value": "9"}, {"name": "MINE", "value": "1"}],
            "args": ["--ps_hosts=$(PS_HOSTS)"],
        },
    ]
    pod = desired_pod(parse_tfjob(m), "Worker", 0)
    sidecar, tf = pod["spec"]["containers"]
    assert "env" not in sidecar and "ports" not in sidecar
    names = [e["name"] for e in tf["env"]]
    assert names == ["TF_CONFIG", "PS_HOSTS", "WORKER_HOSTS", "JOB_NAME", "TASK_INDEX", "MINE"]
    assert {e["name"]: e["value"] for e in tf["env"]}["TASK_INDEX"] == "0"


def test_builder_does_not_mutate_the_job():
    tfjob = job({"Worker": 2})
    before = tfjob.model_dump()
    desired_pods(tfjob)
    assert tfjob.model_dump() == before


def test_headless_service_exposes_named_ports():
    m = manifest({"Worker": 1}, ports={"Worker": 3000})
    m["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"].append(
        {"name": "metrics", "containerPort": 9090}
    )
    svc = desired_service(parse_tfjob(m), "Worker", 0)
    assert svc["metadata"]["name"] == "mnist-worker-0"
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {
        LABELS + "operator-name": "tfjob-controller",
        LABELS + "job-name": "mnist",
        LABELS + "replica-type": "worker",
        LABELS + "replica-index": "0",
        "taas.dev/job-uid": "uid-1",  # never a terminating pod of an earlier job of this name
    }
    assert svc["spec"]["ports"] == [
        {"name": "tfjob-port", "port": 3000, "targetPort": 3000, "protocol": "TCP"},
        {"name": "metrics", "port": 9090, "targetPort": 9090, "protocol": "TCP"},
    ]
    assert svc["metadata"]["ownerReferences"][0]["controller"] is True


def test_services_one_per_replica():
    names = [s["metadata"]["name"] for s in desired_services(job({"Chief": 1, "Worker": 2}))]
    assert names == ["mnist-chief-0", "mnist-worker-0", "mnist-worker-1"]


def test_network_policy_admits_tf_ports_only_from_the_job():
    m = manifest({"PS": 1, "Worker": 1}, ports={"PS": 3333})
    m["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "metrics", "containerPort": 9090}
    ]
    policy = desired_network_policy(parse_tfjob(m), extra_namespaces=["monitoring"])
    assert policy["kind"] == "NetworkPolicy"
    assert policy["metadata"]["name"] == "mnist"
    spec = policy["spec"]
    assert spec["podSelector"]["matchLabels"][LABELS + "job-name"] == "mnist"
    assert spec["policyTypes"] == ["Ingress"]
    tf_rule, other_rule = spec["ingress"]
    assert tf_rule["ports"] == [
        {"protocol": "TCP", "port": 2222},
        {"protocol": "TCP", "port": 3333},
    ]
    assert tf_rule["from"][:2] == OWN_PODS
    assert tf_rule["from"][2]["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "monitoring"
    ]
    assert other_rule == {"ports": [{"protocol": "TCP", "port": 9090}]}


#: A policy's peers: this incarnation's pods, and pods older than the uid label (a job running
#: across an operator upgrade); never a terminating pod of an earlier job of the same name.
OWN_PODS = [
    {"podSelector": {"matchLabels": {LABELS + "job-name": "mnist", "taas.dev/job-uid": "uid-1"}}},
    {
        "podSelector": {
            "matchLabels": {LABELS + "job-name": "mnist"},
            "matchExpressions": [{"key": "taas.dev/job-uid", "operator": "DoesNotExist"}],
        }
    },
]


def test_network_policy_without_extra_namespaces():
    policy = desired_network_policy(job({"Worker": 2}))
    assert policy["spec"]["ingress"] == [
        {
            "from": OWN_PODS,
            "ports": [{"protocol": "TCP", "port": 2222}],
        }
    ]
