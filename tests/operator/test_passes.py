"""What a job costs the operator: the watch events of a pass's own writes (the objects it
created, the job's status) start no further pass, and passes read the job's children from the
watch cache, not with LISTs -- yet a real change still starts a pass, objects that already
exist under the job's names are found, not recreated, and objects deleted while a watch was
down are found gone.

The Expectations state machine is tested on its own (pure); the rest on the in-memory apiserver (the
fast tier: `tests.harness.fakeapi`, the Controller in-process). No kubelet runs: the test writes
pod status through the pods/status subresource.
"""

from __future__ import annotations

import pytest

from taas_operator.controller.watch.expectations import Expectations
from taas_operator.planner import replica_labels
from tests.harness.operator_run import (
    PODS,
    Api,
    StartOperator,
    condition,
    named_in_events,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = pytest.mark.fast

POD = ("pods", "job-worker-0")


def test_echo_of_own_creation_is_dropped_once() -> None:
    expectations = Expectations()
    expectations.expect("job", POD)
    assert expectations.created("job", POD, "100") is False
    assert expectations.seen("job", POD, "ADDED", "100") is False  # the echo
    assert expectations.seen("job", POD, "ADDED", "100") is True  # a second one is news
    assert expectations.seen("job", POD, "MODIFIED", "101") is True
    assert len(expectations) == 0


def test_echo_arriving_before_the_post_returns() -> None:
    expectations = Expectations()
    expectations.expect("job", POD)
    assert expectations.seen("job", POD, "ADDED", "100") is False  # held until the POST ends
    assert expectations.created("job", POD, "100") is False  # it was ours
    expectations.expect("job", POD)
    assert expectations.seen("job", POD, "ADDED", "200") is False
    assert expectations.created("job", POD, None) is True  # the name was taken: someone else's
    expectations.expect("job", POD)
    assert expectations.seen("job", POD, "ADDED", "300") is False
    assert expectations.created("job", POD, "301") is True  # another version than ours


def test_other_events_and_other_jobs_always_need_a_pass() -> None:
    expectations = Expectations()
    expectations.expect("job", POD)
    assert expectations.seen("job", POD, "DELETED", "90") is True
    assert expectations.seen("other", POD, "ADDED", "100") is True
    assert expectations.seen("job", ("services", "job-worker-0"), "ADDED", "100") is True
    assert expectations.seen("job", POD, None, "100") is True  # a (re)listing is not an echo
    assert expectations.created("job", POD, "100") is False
    expectations.forget("job")
    assert expectations.seen("job", POD, "ADDED", "100") is True
    assert len(expectations) == 0


def test_status_write_echo_is_a_modified_event() -> None:
    expectations = Expectations()
    job = ("tfjobs", "job")
    expectations.expect("job", job, "MODIFIED")
    assert expectations.seen("job", job, "ADDED", "5") is True  # not the type a status write makes
    assert expectations.seen("job", job, "MODIFIED", "6") is False
    assert expectations.created("job", job, "6") is False
    expectations.expect("job", job, "MODIFIED")
    assert expectations.seen("job", job, "MODIFIED", "7") is False
    assert expectations.created("job", job, None) is True  # the write failed: that was someone else


def _count(log: str, text: str) -> int:
    return log.count(text)


@pytest.mark.timeout(120)
def test_one_pass_creates_a_job_and_real_changes_still_count(
    fake_admin: Api, start_fake_operator: StartOperator
) -> None:
    ns = new_namespace(fake_admin, "pass")
    operator = start_fake_operator(ns, args=("--log-level", "DEBUG"))
    name = unique("one")
    fake_admin.create_tfjob(ns, tfjob(name, {"PS": {}, "Worker": {"replicas": 2}}))
    pods = wait(lambda: len(p := fake_admin.pods(ns, name)) == 3 and p, "3 pods")
    wait(lambda: len(fake_admin.services(ns, name)) == 3, "3 services")
    # 3 pods + 3 services + the NetworkPolicy: 7 expectations, all dropped.
    echo = f"{ns}/{name}: echo of our creation of "
    wait(lambda: _count(operator.log(), echo) == 7, "7 echoes dropped", timeout=10)
    log = operator.log()
    assert _count(log, f"reconciling {ns}/{name}\n") == 1, log[-3000:]
    assert f"{ns}/{name}: listing its children" not in log  # the watch cache, no LIST
    # A real change (a pod's phase) still starts a pass, which counts the pod -- from the
    # watch cache, which that very event updated: still no LIST.
    fake_admin.set_pod_phase(ns, f"{name}-worker-1", "Running")
    wait(
        lambda: (
            (j := fake_admin.tfjob(ns, name))
            and j["status"]["replicaStatuses"].get("Worker", {}).get("active") == 1
        ),
        "the running worker counted",
    )
    log = operator.log()
    assert _count(log, f"reconciling {ns}/{name}\n") == 2, log[-3000:]
    assert f"{ns}/{name}: listing its children" not in log
    assert {p["metadata"]["uid"] for p in fake_admin.pods(ns, name).values()} == {
        p["metadata"]["uid"] for p in pods.values()
    }


@pytest.mark.timeout(120)
def test_children_made_before_the_first_status_are_found_not_recreated(
    fake_admin: Api, start_fake_operator: StartOperator
) -> None:
    """A pod of the job already exists when the job has no status (an operator made it and
    died before writing status): the name is found taken, the next pass lists it and counts
    it. (A pod under the name that the job does not control is not its: test_owned.)"""
    ns = new_namespace(fake_admin, "taken")
    name = unique("taken")
    made = fake_admin.create_tfjob(ns, tfjob(name, {"Worker": {}}))  # no operator yet
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": name,
             "uid": made["metadata"]["uid"], "controller": True}  # fmt: skip
    pod_name = f"{name}-worker-0"
    pod = {
        "metadata": {
            "name": pod_name,
            "labels": replica_labels(name, "Worker", 0),
            "ownerReferences": [owner],
        },
        "spec": {"containers": [{"name": "tensorflow", "image": "example.com/trainer:1"}]},
    }
    uid = fake_admin.create(PODS.format(ns=ns), pod)["metadata"]["uid"]
    fake_admin.set_pod_phase(ns, pod_name, "Running")
    start_fake_operator(ns)
    job = wait(
        lambda: (
            (j := fake_admin.tfjob(ns, name))
            and (j.get("status") or {}).get("replicaStatuses", {}).get("Worker", {}).get("active")
            == 1
            and j
        ),
        "the existing running pod counted",
    )
    assert condition(job, "Running"), job["status"]
    assert fake_admin.pods(ns, name)[pod_name]["metadata"]["uid"] == uid
    events = fake_admin.events(ns, name)
    assert named_in_events(events) == [], events  # no event says a pod was created
