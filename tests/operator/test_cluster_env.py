"""The pods and services the running operator creates (on the in-memory apiserver: the fast
tier): TF_CONFIG and the classic env of every pod (exact strings and parsed back), labels,
owner references, ports.

No kubelet runs, so the pods stay Pending; nothing here needs them to run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.harness.operator_run import (
    Api,
    StartOperator,
    env_of,
    new_namespace,
    tfjob,
)
from tests.harness.waiting import wait
from tests.operator.fake_operator import module_fixtures

pytestmark = [pytest.mark.fast, pytest.mark.timeout(120)]


admin, start_operator = module_fixtures()


@pytest.fixture(scope="module")
def ns(admin: Api, start_operator: StartOperator) -> str:
    """A namespace watched by an operator with default settings."""
    name = new_namespace(admin, "env")
    start_operator(name)
    return name


def _pods_of(admin: Api, ns: str, manifest: dict[str, Any], count: int) -> dict[str, dict]:
    name = manifest["metadata"]["name"]
    admin.create_tfjob(ns, manifest)
    return wait(
        lambda: (pods := admin.pods(ns, name)) and len(pods) == count and pods,
        f"{count} pods of {name}",
    )


def _task(env: dict[str, str]) -> dict[str, Any]:
    return dict(json.loads(env["TF_CONFIG"])["task"])


def test_ps_and_two_workers(admin: Api, ns: str) -> None:
    pods = _pods_of(admin, ns, tfjob("dist", {"PS": {}, "Worker": {"replicas": 2}}), 3)
    ps, w0, w1 = (f"dist-{r}.{ns}.svc:2222" for r in ("ps-0", "worker-0", "worker-1"))
    assert env_of(pods["dist-worker-1"])["TF_CONFIG"] == (
        f'{{"cluster":{{"ps":["{ps}"],"worker":["{w0}","{w1}"]}},'
        f'"task":{{"type":"worker","index":1}},"environment":"cloud"}}'
    )
    for name, (rtype, index) in {
        "dist-ps-0": ("ps", 0),
        "dist-worker-0": ("worker", 0),
        "dist-worker-1": ("worker", 1),
    }.items():
        env = env_of(pods[name])
        assert json.loads(env["TF_CONFIG"]) == {
            "cluster": {"ps": [ps], "worker": [w0, w1]},
            "task": {"type": rtype, "index": index},
            "environment": "cloud",
        }
        assert env["PS_HOSTS"] == ps
        assert env["WORKER_HOSTS"] == f"{w0},{w1}"
        assert "CHIEF_HOSTS" not in env
        assert (env["JOB_NAME"], env["TASK_INDEX"]) == (rtype, str(index))
        # The cluster variables come first, before anything the user set.
        container = pods[name]["spec"]["containers"][0]
        assert [e["name"] for e in container["env"]][:1] == ["TF_CONFIG"]


def test_chief_ps_worker_evaluator(admin: Api, ns: str) -> None:
    replicas: dict[str, dict[str, Any]] = {"Chief": {}, "PS": {}, "Worker": {}, "Evaluator": {}}
    pods = _pods_of(admin, ns, tfjob("cpwe", replicas), 4)
    host = {t: f"cpwe-{t}-0.{ns}.svc:2222" for t in ("chief", "evaluator", "ps", "worker")}
    assert env_of(pods["cpwe-evaluator-0"])["TF_CONFIG"] == (
        f'{{"cluster":{{"chief":["{host["chief"]}"],"evaluator":["{host["evaluator"]}"],'
        f'"ps":["{host["ps"]}"],"worker":["{host["worker"]}"]}},'
        f'"task":{{"type":"evaluator","index":0}},"environment":"cloud"}}'
    )
    for rtype in host:
        env = env_of(pods[f"cpwe-{rtype}-0"])
        parsed = json.loads(env["TF_CONFIG"])
        assert parsed["cluster"] == {t: [h] for t, h in host.items()}
        assert parsed["task"] == {"type": rtype, "index": 0}
        assert env["CHIEF_HOSTS"] == host["chief"]
        assert env["JOB_NAME"] == rtype
    # job-role=master marks the chief only.
    roles = {
        n: p["metadata"]["labels"].get("training.kubeflow.org/job-role") for n, p in pods.items()
    }
    assert roles == {
        "cpwe-chief-0": "master",
        "cpwe-evaluator-0": None,
        "cpwe-ps-0": None,
        "cpwe-worker-0": None,
    }


def test_master(admin: Api, ns: str) -> None:
    pods = _pods_of(admin, ns, tfjob("mst", {"Master": {}, "Worker": {}}), 2)
    m, w = f"mst-master-0.{ns}.svc:2222", f"mst-worker-0.{ns}.svc:2222"
    assert env_of(pods["mst-master-0"])["TF_CONFIG"] == (
        f'{{"cluster":{{"master":["{m}"],"worker":["{w}"]}},'
        f'"task":{{"type":"master","index":0}},"environment":"cloud"}}'
    )
    assert _task(env_of(pods["mst-worker-0"])) == {"type": "worker", "index": 0}
    assert env_of(pods["mst-worker-0"])["CHIEF_HOSTS"] == m


def test_enable_dynamic_worker(admin: Api, ns: str) -> None:
    manifest = tfjob("dyn", {"PS": {"replicas": 2}, "Worker": {"replicas": 2}})
    manifest["spec"]["enableDynamicWorker"] = True
    pods = _pods_of(admin, ns, manifest, 4)
    ps = [f"dyn-ps-{i}.{ns}.svc:2222" for i in range(2)]
    assert env_of(pods["dyn-worker-1"])["TF_CONFIG"] == (
        f'{{"cluster":{{"worker":{{"1":"dyn-worker-1.{ns}.svc:2222"}},'
        f'"ps":["{ps[0]}","{ps[1]}"]}},"task":{{"type":"worker","index":1}}}}'
    )
    assert json.loads(env_of(pods["dyn-ps-1"])["TF_CONFIG"]) == {
        "cluster": {"worker": {}, "ps": [ps[1]]},
        "task": {"type": "ps", "index": 1},
    }


def test_custom_cluster_domain(admin: Api, start_operator: StartOperator) -> None:
    ns = new_namespace(admin, "dom")
    start_operator(ns, args=("--cluster-domain", "cluster.local"))
    pods = _pods_of(admin, ns, tfjob("dom", {"PS": {}, "Worker": {}}), 2)
    ps, w = (f"dom-{r}-0.{ns}.svc.cluster.local:2222" for r in ("ps", "worker"))
    env = env_of(pods["dom-worker-0"])
    assert env["TF_CONFIG"] == (
        f'{{"cluster":{{"ps":["{ps}"],"worker":["{w}"]}},'
        f'"task":{{"type":"worker","index":0}},"environment":"cloud"}}'
    )
    assert (env["PS_HOSTS"], env["WORKER_HOSTS"]) == (ps, w)


def test_objects_labels_owner_and_ports(admin: Api, ns: str) -> None:
    """Kubeflow's labels, a controller owner reference, headless services, tfjob-port."""
    manifest = tfjob("objs", {"Worker": {"replicas": 2, "restartPolicy": "ExitCode"}})
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "labels": {"team": "a"},
        "annotations": {"note": "kept"},
    }
    pods = _pods_of(admin, ns, manifest, 2)
    job = admin.tfjob(ns, "objs")
    assert job is not None
    services = wait(lambda: len(s := admin.services(ns, "objs")) == 2 and s, "2 services")
    for index in range(2):
        name = f"objs-worker-{index}"
        pod, svc = pods[name], services[name]
        expected_owner = {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "name": "objs",
            "uid": job["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert pod["metadata"]["ownerReferences"] == [expected_owner]
        assert svc["metadata"]["ownerReferences"] == [expected_owner]
        assert pod["metadata"]["labels"] == {
            "team": "a",
            "training.kubeflow.org/operator-name": "tfjob-controller",
            "training.kubeflow.org/job-name": "objs",
            "training.kubeflow.org/replica-type": "worker",
            "training.kubeflow.org/replica-index": str(index),
            **({"training.kubeflow.org/job-role": "master"} if index == 0 else {}),
            "taas.dev/job-uid": job["metadata"]["uid"],  # this incarnation's pods (issue 24)
        }
        annotations = dict(pod["metadata"]["annotations"])
        # the operator's token (issue 39: a pod is the job's only if the operator made it)
        assert len(annotations.pop("taas.dev/made-by")) == 64
        assert annotations == {"note": "kept"}
        assert pod["spec"]["restartPolicy"] == "Never"  # ExitCode is the operator's job
        progress = [{"name": "taas-progress", "containerPort": 2223, "protocol": "TCP"}]
        assert pod["spec"]["containers"][0]["ports"] == [
            {"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"},
            *(progress if index == 0 else []),  # worker 0, the chief: where progress is read
        ]
        assert svc["spec"]["clusterIP"] == "None"
        assert svc["spec"]["publishNotReadyAddresses"] is True
        assert svc["spec"]["selector"]["training.kubeflow.org/replica-index"] == str(index)
        assert svc["spec"]["selector"]["taas.dev/job-uid"] == job["metadata"]["uid"]
        assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [("tfjob-port", 2222)]
    # kopf keeps nothing on the TFJob: no finalizer, no bookkeeping annotations.
    assert not job["metadata"].get("finalizers")
    assert not [k for k in job["metadata"].get("annotations") or {} if "kopf" in k or "taas" in k]
