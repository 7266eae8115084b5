"""Adoption that cannot be forged (issue 39): someone who may create pods in a job's namespace
makes a pod under a replica's name with the job's labels and a controller ownerReference to
its uid, and lets it exit 0. Before, the operator took it for the chief and the job
Succeeded; now a pod is the job's only if the operator made it (its taas.dev/made-by token),
so the job fails naming the pod (ObjectNotOwned) and the pod is left alone. In-memory
apiserver, the Controller in this process."""

from __future__ import annotations

import pytest

from taas_operator.api.constants import MADE_BY_ANNOTATION
from taas_operator.controller.seen import Adoption
from taas_operator.planner import made_by_token, replica_labels
from tests.harness.operator_run import (
    PODS,
    Api,
    StartOperator,
    condition,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.fast, pytest.mark.timeout(120)]


def _forged_pod(name: str, job: dict, uid: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {
                **replica_labels(job["metadata"]["name"], "Worker", 0),
                "job-role": "master",
            },
            "annotations": {MADE_BY_ANNOTATION: "0" * 64},  # a guess at the token
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "TFJob",
                    "name": job["metadata"]["name"],
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "tensorflow", "image": "example.com/evil:1"}]},
    }


def test_a_pod_made_by_someone_else_with_the_jobs_owner_reference_is_not_adopted(
    fake_admin: Api, start_fake_operator: StartOperator
) -> None:
    ns = new_namespace(fake_admin, "forge")
    name = unique("forged")
    fake_admin.create_tfjob(ns, tfjob(name, {"Worker": {}}, runPolicy={"suspend": True}))
    start_fake_operator(ns)
    job = wait(lambda: condition(j := fake_admin.tfjob(ns, name), "Suspended") and j, "Suspended")
    pod = f"{name}-worker-0"
    fake_admin.create(PODS.format(ns=ns), _forged_pod(pod, job, job["metadata"]["uid"]))
    fake_admin.set_pod_phase(ns, pod, "Succeeded", exit_code=0)
    fake_admin.patch_tfjob(ns, name, {"spec": {"runPolicy": {"suspend": False}}})
    failed = wait(lambda: condition(fake_admin.tfjob(ns, name), "Failed"), "Failed")
    assert failed["reason"] == "ObjectNotOwned"
    assert f"pod/{pod}" in failed["message"]
    assert condition(fake_admin.tfjob(ns, name), "Succeeded") is None
    # left alone: neither deleted (suspension, clean-up) nor replaced
    kept = fake_admin.pods(ns, name)[pod]
    assert kept["spec"]["containers"][0]["image"] == "example.com/evil:1"


def test_the_operators_own_pods_carry_its_token_and_are_counted(
    fake_admin: Api, start_fake_operator: StartOperator
) -> None:
    ns = new_namespace(fake_admin, "own")
    name = unique("own")
    fake_admin.create_tfjob(ns, tfjob(name, {"Worker": {}}))
    start_fake_operator(ns)
    pods = wait(lambda: fake_admin.pods(ns, name), "its pod")
    (pod,) = pods.values()
    assert len(pod["metadata"]["annotations"][MADE_BY_ANNOTATION]) == 64
    fake_admin.set_pod_phase(ns, pod["metadata"]["name"], "Succeeded", exit_code=0)
    wait(lambda: condition(fake_admin.tfjob(ns, name), "Succeeded"), "Succeeded")


def test_what_a_process_trusts() -> None:
    """Its own token always; without it, only a pod created before its first pass (an earlier
    process's, or the replica's it took over from); a token of another key or another name,
    never after that."""
    adoption = Adoption()
    meta = {
        "namespace": "team",
        "name": "job-worker-0",
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    assert adoption.made_by_us(meta, "uid-1")  # listed before any pass: trusted
    adoption.activate()
    assert adoption.made_by_us(meta, "uid-1")  # created before the first pass
    later = {**meta, "creationTimestamp": "2999-01-01T00:00:00Z"}
    assert not adoption.made_by_us(later, "uid-1")
    own = made_by_token(adoption.key, "team", "job-worker-0", "uid-1")
    assert adoption.made_by_us({**later, "annotations": {MADE_BY_ANNOTATION: own}}, "uid-1")
    for other in (
        made_by_token(b"another key", "team", "job-worker-0", "uid-1"),
        made_by_token(adoption.key, "team", "job-worker-1", "uid-1"),  # a sibling's token
        made_by_token(adoption.key, "team", "job-worker-0", "uid-2"),  # an earlier job's
    ):
        assert not adoption.made_by_us(
            {**later, "annotations": {MADE_BY_ANNOTATION: other}}, "uid-1"
        )


def test_a_pod_of_the_second_the_passes_began_is_trusted_only_if_seen_before_them() -> None:
    """creationTimestamp has whole seconds: Kubeflow's (or an earlier operator's) pod made in
    the second this process began its passes stays the job's when the kubelet next writes its
    status (CI met the job failing ObjectNotOwned there), while a pod first seen after the
    first pass, made in that same second, is not."""
    adoption = Adoption()
    kubeflows = {"namespace": "team", "name": "job-worker-1", "uid": "pod-a"}
    assert adoption.made_by_us(kubeflows, "uid-1")  # listed before the first pass
    adoption.activate()
    assert adoption.since is not None
    same_second = {"creationTimestamp": adoption.since}
    assert adoption.made_by_us({**kubeflows, **same_second}, "uid-1")  # its status written
    forged = {"namespace": "team", "name": "job-worker-0", "uid": "pod-b", **same_second}
    assert not adoption.made_by_us(forged, "uid-1")
