"""Issue 29, point 3: the operator changes and deletes only what a job controls.

A tenant who may only create TFJobs names a job like an object they may not touch (an
administrator's NetworkPolicy `default-deny`, a Service or pod made by hand with the job's
labels, a PodGroup, a TensorBoard Deployment or Service): the object is left exactly as it was,
on every path (the job's creation, suspension, TTL expiry), and the job says so: Failed with
reason ObjectNotOwned and a Warning event, both naming the object (kind/name) and the fix.
That each write the operator makes is conditional on the uid it read (what the apiserver
does with it): test_owned_writes.

On the in-memory apiserver (the fast tier: `tests.harness.fakeapi`, PodGroups served, the
Controller in-process). No garbage collector and no kubelet run here.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.harness.operator_run import (
    PODS,
    POLICIES,
    SERVICES,
    Api,
    StartOperator,
    new_namespace,
    tfjob,
    unchanged,
    unique,
)
from tests.harness.waiting import wait
from tests.operator.fake_operator import module_fixtures

pytestmark = [pytest.mark.fast, pytest.mark.timeout(180)]

PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups"
DEPLOYMENTS = "/apis/apps/v1/namespaces/{ns}/deployments"
_GROUP_TYPE = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup"}
_POD_SPEC = {"containers": [{"name": "tensorflow", "image": "example.com/trainer:1"}]}


admin, start_operator = module_fixtures()


@pytest.fixture(scope="module")
def ns(admin: Api, start_operator: StartOperator) -> str:
    name = new_namespace(admin, "owned")
    start_operator(name)
    return name


def _labels(job: str, index: int = 0) -> dict[str, str]:
    """The labels the operator puts on a job's Worker `index`: made by hand here."""
    return {
        "training.kubeflow.org/operator-name": "tfjob-controller",
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": str(index),
    }


def _not_owned(admin: Api, ns: str, job: str, obj: str) -> tuple[str, str]:
    """Wait for the job's Failed condition (reason ObjectNotOwned) and Warning event naming
    `obj` (kind/name) and the fix; both messages."""

    def failed() -> str | None:
        for cond in ((admin.tfjob(ns, job) or {}).get("status") or {}).get("conditions") or []:
            if cond["type"] == "Failed" and cond["status"] == "True":
                assert cond["reason"] == "ObjectNotOwned", cond
                return str(cond["message"])
        return None

    condition = wait(failed, f"{job} Failed naming {obj}")
    event = wait(
        lambda: [
            e["message"]
            for e in admin.events(ns, job)
            if e["reason"] == "ObjectNotOwned" and e["type"] == "Warning"
        ],
        "the ObjectNotOwned Warning",
    )[0]
    for message in (condition, event):
        assert f"{obj} already exists and is not this TFJob's" in message
        assert "it is left alone" in message
        assert "Fix: rename the TFJob" in message
    return condition, event


def test_ttl_leaves_the_admins_network_policy_named_like_the_job(admin: Api, ns: str) -> None:
    """The issue's attack: a failing job named `default-deny` with ttlSecondsAfterFinished;
    the operator used to delete the NetworkPolicy of that name when the TTL expired."""
    policy = admin.create(
        POLICIES.format(ns=ns),
        {
            "metadata": {"name": "default-deny"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
        },
    )
    path = f"{POLICIES.format(ns=ns)}/default-deny"
    manifest = tfjob("default-deny", {"Worker": {}}, runPolicy={"ttlSecondsAfterFinished": 4})
    admin.create_tfjob(ns, manifest)
    condition, _ = _not_owned(admin, ns, "default-deny", "networkpolicy/default-deny")
    assert "nothing controls it: made by hand, or orphaned" in condition
    wait(lambda: admin.tfjob(ns, "default-deny") is None, "the TTL deletion", timeout=30)
    time.sleep(1)  # a deletion after the job's would come now
    unchanged(admin, path, policy)


def test_suspension_leaves_a_pod_and_a_service_made_by_hand(admin: Api, ns: str) -> None:
    """A pod and a Service named and labelled like the job's Worker 0, made by someone else:
    suspending the job (which deletes its pods and services) leaves them; resuming it, the job
    fails naming them instead of using them."""
    name = unique("susp")
    pod = admin.create(
        PODS.format(ns=ns),
        {"metadata": {"name": f"{name}-worker-0", "labels": _labels(name)}, "spec": _POD_SPEC},
    )
    service = admin.create(
        SERVICES.format(ns=ns),
        {
            "metadata": {"name": f"{name}-worker-0", "labels": _labels(name)},
            "spec": {"clusterIP": "None", "ports": [{"port": 2222}]},
        },
    )
    admin.create_tfjob(ns, tfjob(name, {"Worker": {}}, runPolicy={"suspend": True}))
    # the suspended pass's event comes after its deletions and its NetworkPolicy
    wait(
        lambda: any("policy" in e["message"] for e in admin.events(ns, name)),
        "the suspended pass done",
    )
    time.sleep(1)
    unchanged(admin, f"{PODS.format(ns=ns)}/{name}-worker-0", pod)
    unchanged(admin, f"{SERVICES.format(ns=ns)}/{name}-worker-0", service)

    admin.patch_tfjob(ns, name, {"spec": {"runPolicy": {"suspend": False}}})
    condition, _ = _not_owned(admin, ns, name, f"pod/{name}-worker-0")
    assert f"service/{name}-worker-0 already exists" in condition
    time.sleep(1)
    unchanged(admin, f"{PODS.format(ns=ns)}/{name}-worker-0", pod)
    unchanged(admin, f"{SERVICES.format(ns=ns)}/{name}-worker-0", service)


def test_a_service_of_another_controller_is_not_the_jobs(admin: Api, ns: str) -> None:
    """A Service with the job's labels that another kind of object controls (a Deployment's
    own Service, say) is neither used nor deleted when the job finishes (cleanPodPolicy All)."""
    name = unique("svc")
    owner = admin.create(
        DEPLOYMENTS.format(ns=ns),
        {
            "metadata": {"name": f"{name}-owner"},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": _POD_SPEC},
            },
        },
    )
    ref = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    service = admin.create(
        SERVICES.format(ns=ns),
        {
            "metadata": {
                "name": f"{name}-worker-0",
                "labels": _labels(name),
                "ownerReferences": [ref],
            },
            "spec": {"clusterIP": "None", "ports": [{"port": 2222}]},
        },
    )
    admin.create_tfjob(ns, tfjob(name, {"Worker": {}}, runPolicy={"cleanPodPolicy": "All"}))
    condition, _ = _not_owned(admin, ns, name, f"service/{name}-worker-0")
    assert "controlled by an object that is not a TFJob" in condition
    time.sleep(1)
    unchanged(admin, f"{SERVICES.format(ns=ns)}/{name}-worker-0", service)


def test_the_tensorboard_names_held_by_others(admin: Api, ns: str) -> None:
    """A Deployment, and a Service, named `<job>-tensorboard` by someone else: left alone."""
    volume = {"name": "model", "persistentVolumeClaim": {"claimName": "runs"}}
    container = {
        "name": "tensorflow",
        "image": "example.com/trainer:1",
        "env": [{"name": "TF_LOGDIR", "value": "/model/run"}],
        "volumeMounts": [{"name": "model", "mountPath": "/model"}],
    }
    for kind, path in (("deployment", DEPLOYMENTS), ("service", SERVICES)):
        name = unique(f"tb{kind[0]}")
        board = f"{name}-tensorboard"
        if kind == "deployment":
            spec: dict[str, Any] = {
                "selector": {"matchLabels": {"app": board}},
                "template": {"metadata": {"labels": {"app": board}}, "spec": _POD_SPEC},
            }
        else:
            spec = {"selector": {"app": board}, "ports": [{"port": 80}]}
        held = admin.create(path.format(ns=ns), {"metadata": {"name": board}, "spec": spec})
        manifest = tfjob(name, {"Worker": {"containers": [container]}})
        manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["volumes"] = [volume]
        manifest["metadata"]["annotations"] = {"taas.dev/tensorboard": "true"}
        admin.create_tfjob(ns, manifest)
        _not_owned(admin, ns, name, f"{kind}/{board}")
        time.sleep(1)
        unchanged(admin, f"{path.format(ns=ns)}/{board}", held)


def test_a_pod_group_it_does_not_own(admin: Api, start_operator: StartOperator) -> None:
    """Gang scheduling on: a PodGroup named like the job that someone else made is neither
    changed (the operator puts its own PodGroup's spec back) nor joined by the job's pods."""
    ns = new_namespace(admin, "ownedpg")
    start_operator(ns, args=("--gang-scheduler-name=scheduler-plugins",))
    name = unique("pg")
    group = admin.create(
        PODGROUPS.format(ns=ns),
        {**_GROUP_TYPE, "metadata": {"name": name}, "spec": {"minMember": 1}},
    )
    admin.create_tfjob(ns, tfjob(name, {"Worker": {"replicas": 2}}))
    _not_owned(admin, ns, name, f"podgroup/{name}")
    time.sleep(1)
    unchanged(admin, f"{PODGROUPS.format(ns=ns)}/{name}", group)
    assert admin.pods(ns, name) == {}
