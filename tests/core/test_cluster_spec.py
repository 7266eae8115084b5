"""TF_CONFIG and classic env: exact strings as Kubeflow's genTFConfigJSON (Go encoding/json)."""

from __future__ import annotations

import json

import pytest

from taas_operator.planner import BuildOptions, desired_pod
from taas_operator.tfjob import classic_env, cluster_env, is_distributed, service_hosts, tf_config

from .helpers import job

# (replicas, extra spec, replica type, index, cluster domain, expected TF_CONFIG)
CASES = [
    (
        {"PS": 1, "Worker": 2},
        {},
        "Worker",
        1,
        "",
        '{"cluster":{"ps":["mnist-ps-0.ns1.svc:2222"],"worker":["mnist-worker-0.ns1.svc:2222",'
        '"mnist-worker-1.ns1.svc:2222"]},"task":{"type":"worker","index":1},'
        '"environment":"cloud"}',
    ),
    (
        {"PS": 1, "Worker": 2},
        {},
        "PS",
        0,
        "",
        '{"cluster":{"ps":["mnist-ps-0.ns1.svc:2222"],"worker":["mnist-worker-0.ns1.svc:2222",'
        '"mnist-worker-1.ns1.svc:2222"]},"task":{"type":"ps","index":0},"environment":"cloud"}',
    ),
    (
        {"Worker": 1, "PS": 1, "Evaluator": 1, "Chief": 1},
        {},
        "Evaluator",
        0,
        "",
        '{"cluster":{"chief":["mnist-chief-0.ns1.svc:2222"],"evaluator":["mnist-evaluator-0.ns1'
        '.svc:2222"],"ps":["mnist-ps-0.ns1.svc:2222"],"worker":["mnist-worker-0.ns1.svc:2222"]},'
        '"task":{"type":"evaluator","index":0},"environment":"cloud"}',
    ),
    (
        {"Worker": 1, "PS": 1, "Evaluator": 1, "Chief": 1},
        {},
        "Chief",
        0,
        "",
        '{"cluster":{"chief":["mnist-chief-0.ns1.svc:2222"],"evaluator":["mnist-evaluator-0.ns1'
        '.svc:2222"],"ps":["mnist-ps-0.ns1.svc:2222"],"worker":["mnist-worker-0.ns1.svc:2222"]},'
        '"task":{"type":"chief","index":0},"environment":"cloud"}',
    ),
    (
        {"Master": 1, "Worker": 1},
        {},
        "Master",
        0,
        "",
        '{"cluster":{"master":["mnist-master-0.ns1.svc:2222"],"worker":["mnist-worker-0.ns1.svc:'
        '2222"]},"task":{"type":"master","index":0},"environment":"cloud"}',
    ),
    (
        {"PS": 2, "Worker": 2},
        {"enableDynamicWorker": True},
        "Worker",
        1,
        "",
        '{"cluster":{"worker":{"1":"mnist-worker-1.ns1.svc:2222"},"ps":["mnist-ps-0.ns1.svc:2222"'
        ',"mnist-ps-1.ns1.svc:2222"]},"task":{"type":"worker","index":1}}',
    ),
    (
        {"PS": 2, "Worker": 2},
        {"enableDynamicWorker": True},
        "PS",
        1,
        "",
        '{"cluster":{"worker":{},"ps":["mnist-ps-1.ns1.svc:2222"]},"task":{"type":"ps","index":1}}',
    ),
    (
        {"PS": 1, "Worker": 1, "Chief": 1},
        {"enableDynamicWorker": True},
        "Chief",
        0,
        "",
        # TaaS: Kubeflow writes empty maps here, which TensorFlow rejects (kubeflow/trainer#1763).
        '{"cluster":{"worker":{},"ps":["mnist-ps-0.ns1.svc:2222"],"chief":["mnist-chief-0.ns1.svc'
        ':2222"]},"task":{"type":"chief","index":0}}',
    ),
    (
        {"PS": 1, "Worker": 1},
        {},
        "Worker",
        0,
        "cluster.local",
        '{"cluster":{"ps":["mnist-ps-0.ns1.svc.cluster.local:2222"],"worker":["mnist-worker-0.ns1'
        '.svc.cluster.local:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}',
    ),
]


@pytest.mark.parametrize(("replicas", "spec", "rtype", "index", "domain", "expected"), CASES)
def test_tf_config_exact(replicas, spec, rtype, index, domain, expected):
    tfjob = job(replicas, **spec)
    got = tf_config(tfjob, rtype, index, service_hosts(tfjob, domain))
    assert got == expected
    parsed = json.loads(got)
    assert parsed["task"] == {"type": rtype.lower(), "index": index}
    # The pod builder puts the very same string on the tensorflow container.
    pod = desired_pod(tfjob, rtype, index, BuildOptions(cluster_domain=domain))
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert json.loads(env["TF_CONFIG"]) == parsed
    assert env["TF_CONFIG"] == expected


def test_custom_tfjob_port_is_used_in_hosts():
    tfjob = job({"PS": 1, "Worker": 1}, ports={"PS": 3333})
    cluster = json.loads(tf_config(tfjob, "Worker", 0, service_hosts(tfjob)))["cluster"]
    assert cluster == {"ps": ["mnist-ps-0.ns1.svc:3333"], "worker": ["mnist-worker-0.ns1.svc:2222"]}


def test_classic_env_with_chief():
    tfjob = job({"Chief": 1, "PS": 2, "Worker": 2})
    env = classic_env(tfjob, "Worker", 1, service_hosts(tfjob))
    assert env == {
        "PS_HOSTS": "mnist-ps-0.ns1.svc:2222,mnist-ps-1.ns1.svc:2222",
        "WORKER_HOSTS": "mnist-worker-0.ns1.svc:2222,mnist-worker-1.ns1.svc:2222",
        "CHIEF_HOSTS": "mnist-chief-0.ns1.svc:2222",
        "JOB_NAME": "worker",
        "TASK_INDEX": "1",
    }


def test_classic_env_without_chief_has_no_chief_hosts():
    tfjob = job({"PS": 1, "Worker": 1})
    env = classic_env(tfjob, "PS", 0, service_hosts(tfjob))
    assert env == {
        "PS_HOSTS": "mnist-ps-0.ns1.svc:2222",
        "WORKER_HOSTS": "mnist-worker-0.ns1.svc:2222",
        "JOB_NAME": "ps",
        "TASK_INDEX": "0",
    }


def test_single_replica_gets_no_tf_config_but_classic_env():
    tfjob = job({"Worker": 1})
    assert not is_distributed(tfjob)
    names = [e["name"] for e in cluster_env(tfjob, "Worker", 0, service_hosts(tfjob))]
    assert names == ["PS_HOSTS", "WORKER_HOSTS", "JOB_NAME", "TASK_INDEX"]


def test_local_host_strategy_maps_every_replica():
    """The local runner's strategy: the same code, 127.0.0.1 and its own ports."""
    tfjob = job({"PS": 1, "Worker": 2})
    ports = {("ps", 0): 40001, ("worker", 0): 40002, ("worker", 1): 40003}

    def local(rtype: str, index: int, port: int) -> str:
        return f"127.0.0.1:{ports[(rtype, index)]}"

    assert tf_config(tfjob, "Worker", 0, local) == (
        '{"cluster":{"ps":["127.0.0.1:40001"],"worker":["127.0.0.1:40002","127.0.0.1:40003"]},'
        '"task":{"type":"worker","index":0},"environment":"cloud"}'
    )
    pod = desired_pod(tfjob, "PS", 0, BuildOptions(hosts=local))
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env["PS_HOSTS"] == "127.0.0.1:40001"
    assert env["WORKER_HOSTS"] == "127.0.0.1:40002,127.0.0.1:40003"
