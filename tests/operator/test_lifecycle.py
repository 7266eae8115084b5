"""Every success / failure / restart rule, driven through the running operator on the
in-memory apiserver (the fast tier: `tests.harness.fakeapi`, the Controller in-process):
conditions, replicaStatuses, start/completion times, events, cleanPodPolicy, restart policies,
backoffLimit, activeDeadlineSeconds (on time), TTL, suspend/resume, scaling, managedBy.

No kubelet runs: the tests play its part by writing pod status through the pods/status
subresource (`Api.set_pod_phase`). One operator watches this module's namespace. A pod the
apiserver itself refuses: test_lifecycle_apiserver.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.harness.operator_run import (
    PODS,
    TFJOBS,
    Api,
    StartOperator,
    condition,
    named_in_event,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait
from tests.operator.fake_operator import module_fixtures

pytestmark = [pytest.mark.fast, pytest.mark.timeout(120)]


admin, start_operator = module_fixtures()


@pytest.fixture(scope="module")
def ns(admin: Api, start_operator: StartOperator) -> str:
    name = new_namespace(admin, "life")
    start_operator(name)
    return name


def _start(admin: Api, ns: str, manifest: dict[str, Any], pods: int) -> dict[str, dict]:
    """Create the job and wait for its pods and services."""
    name = manifest["metadata"]["name"]
    admin.create_tfjob(ns, manifest)
    found = wait(lambda: len(p := admin.pods(ns, name)) == pods and p, f"{pods} pods")
    wait(lambda: len(admin.services(ns, name)) == pods, f"{pods} services")
    return found


def _run_all(admin: Api, ns: str, pods: dict[str, dict]) -> None:
    for pod in pods:
        admin.set_pod_phase(ns, pod, "Running")


def _wait_condition(admin: Api, ns: str, name: str, type_: str, timeout: float = 20) -> dict:
    job = wait(
        lambda: (j := admin.tfjob(ns, name)) and condition(j, type_) and j,
        f"condition {type_} on {name}",
        timeout=timeout,
    )
    return dict(job)


def _reasons(admin: Api, ns: str, name: str) -> list[str]:
    return [e["reason"] for e in admin.events(ns, name)]


def _counts(job: dict[str, Any]) -> dict[str, Any]:
    """replicaStatuses' counts (without the Worker selector the scale subresource reads)."""
    found = (job.get("status") or {}).get("replicaStatuses") or {}
    return {t: {k: v for k, v in s.items() if k != "selector"} for t, s in found.items()}


def _seen_succeeded(admin: Api, ns: str, name: str, rtype: str, count: int) -> dict:
    """Wait until the operator has counted `count` succeeded `rtype` pods (a barrier: the same
    pass decides whether the job is finished)."""
    return dict(
        wait(
            lambda: (
                (j := admin.tfjob(ns, name))
                and _counts(j).get(rtype, {}).get("succeeded") == count
                and j
            ),
            f"{count} succeeded {rtype} counted",
        )
    )


def _time(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def test_success_without_chief_cleans_running_pods(admin: Api, ns: str) -> None:
    """Worker 0 succeeds -> Succeeded; default cleanPodPolicy Running stops the PS."""
    name = unique("ok")
    pods = _start(admin, ns, tfjob(name, {"PS": {}, "Worker": {"replicas": 2}}), 3)
    _run_all(admin, ns, pods)
    counts = {
        "PS": {"active": 1, "failed": 0, "succeeded": 0},
        "Worker": {"active": 2, "failed": 0, "succeeded": 0},
    }
    job = wait(
        lambda: (j := admin.tfjob(ns, name)) and _counts(j) == counts and j, "3 active replicas"
    )
    assert condition(job, "Running")["message"] == f"TFJob {ns}/{name} is running."
    admin.set_pod_phase(ns, f"{name}-worker-0", "Succeeded", exit_code=0)
    job = _wait_condition(admin, ns, name, "Succeeded")
    status = job["status"]
    assert condition(job, "Succeeded")["message"] == f"TFJob {ns}/{name} successfully completed."
    assert _time(status["completionTime"]) >= _time(status["startTime"])
    assert [c["type"] for c in status["conditions"]] == ["Created", "Running", "Succeeded"]
    assert status["conditions"][1]["status"] == "False"  # Running turned False
    # Running pods (PS, worker 1) and their services go; the succeeded pod stays.
    wait(lambda: set(admin.pods(ns, name)) == {f"{name}-worker-0"}, "PS and worker 1 gone")
    assert set(admin.services(ns, name)) == {f"{name}-worker-0"}
    wait(lambda: "TFJobSucceeded" in _reasons(admin, ns, name), "TFJobSucceeded event")
    events = admin.events(ns, name)
    assert {"TFJobCreated", "TFJobRunning", "TFJobSucceeded"} <= set(_reasons(admin, ns, name))
    # One event per pass: the creation names every object the first pass made...
    created = [e for e in events if named_in_event(e["message"])]
    assert [e["reason"] for e in created] == ["TFJobCreated"], events
    message = created[0]["message"]
    assert message.startswith(f"TFJob {name} is created. Created 3 pods: "), message
    assert sorted(named_in_event(message)) == sorted(pods)
    assert sorted(named_in_event(message, noun="service")) == sorted(pods)
    assert named_in_event(message, noun="policy") == [name]
    # ... and the success names what the cleanup deleted (the PS and worker 1, their services).
    succeeded = next(e["message"] for e in events if e["reason"] == "TFJobSucceeded")
    gone = {f"{name}-ps-0", f"{name}-worker-1"}
    assert set(named_in_event(succeeded, "Deleted")) == gone, succeeded
    assert set(named_in_event(succeeded, "Deleted", "service")) == gone, succeeded


def test_chief_success_and_all_workers_policy(admin: Api, ns: str) -> None:
    """With a Chief, only the chief decides; AllWorkers waits for every worker."""
    chief = unique("chief")
    pods = _start(admin, ns, tfjob(chief, {"Chief": {}, "Worker": {}}), 2)
    _run_all(admin, ns, pods)
    admin.set_pod_phase(ns, f"{chief}-worker-0", "Succeeded")
    assert not condition(_seen_succeeded(admin, ns, chief, "Worker", 1), "Succeeded")
    admin.set_pod_phase(ns, f"{chief}-chief-0", "Succeeded")
    _wait_condition(admin, ns, chief, "Succeeded")

    every = unique("all")
    pods = _start(
        admin, ns, tfjob(every, {"Worker": {"replicas": 2}}, successPolicy="AllWorkers"), 2
    )
    _run_all(admin, ns, pods)
    admin.set_pod_phase(ns, f"{every}-worker-0", "Succeeded")
    assert not condition(_seen_succeeded(admin, ns, every, "Worker", 1), "Succeeded")
    admin.set_pod_phase(ns, f"{every}-worker-1", "Succeeded")
    job = _wait_condition(admin, ns, every, "Succeeded")
    assert job["status"]["replicaStatuses"]["Worker"]["succeeded"] == 2


def test_never_fails_the_job_naming_pod_container_and_code(admin: Api, ns: str) -> None:
    name = unique("never")
    pods = _start(admin, ns, tfjob(name, {"PS": {}, "Worker": {"restartPolicy": "Never"}}), 2)
    _run_all(admin, ns, pods)
    admin.set_pod_phase(ns, f"{name}-worker-0", "Failed", exit_code=3)
    job = _wait_condition(admin, ns, name, "Failed")
    assert condition(job, "Failed")["message"] == (
        f"TFJob {ns}/{name} has failed because 1 Worker replica(s) failed "
        f"(pod {name}-worker-0, container tensorflow, exit code 3, reason Error)."
    )
    assert job["status"]["replicaStatuses"]["Worker"]["failed"] == 1
    assert job["status"].get("completionTime")
    wait(lambda: f"{name}-ps-0" not in admin.pods(ns, name), "the PS pod deleted")
    wait(lambda: "TFJobFailed" in _reasons(admin, ns, name), "TFJobFailed event")
    failed = [e for e in admin.events(ns, name) if e["reason"] == "TFJobFailed"]
    assert failed[0]["type"] == "Warning"


def test_on_failure_recreates_a_failed_pod(admin: Api, ns: str) -> None:
    name = unique("onf")
    pods = _start(admin, ns, tfjob(name, {"Worker": {"restartPolicy": "OnFailure"}}), 1)
    pod = f"{name}-worker-0"
    old_uid = pods[pod]["metadata"]["uid"]
    admin.set_pod_phase(ns, pod, "Running")
    admin.set_pod_phase(ns, pod, "Failed", exit_code=1, reason="Evicted")
    new = wait(
        lambda: (p := admin.pods(ns, name).get(pod)) and p["metadata"]["uid"] != old_uid and p,
        "the failed pod recreated",
    )
    assert new["status"]["phase"] == "Pending"
    job = _wait_condition(admin, ns, name, "Restarting")
    assert not condition(job, "Failed")
    assert job["status"]["recreations"][pod]["count"] == 1
    admin.set_pod_phase(ns, pod, "Running")
    _wait_condition(admin, ns, name, "Running")  # Running replaces Restarting
    admin.set_pod_phase(ns, pod, "Succeeded")
    _wait_condition(admin, ns, name, "Succeeded")


def test_exit_code_130_recreates_but_1_fails(admin: Api, ns: str) -> None:
    name = unique("exit")
    pods = _start(admin, ns, tfjob(name, {"Worker": {"restartPolicy": "ExitCode"}}), 1)
    pod = f"{name}-worker-0"
    uid = pods[pod]["metadata"]["uid"]
    admin.set_pod_phase(ns, pod, "Running")
    admin.set_pod_phase(ns, pod, "Failed", exit_code=130)
    recreated = wait(
        lambda: (p := admin.pods(ns, name).get(pod)) and p["metadata"]["uid"] != uid and p,
        "pod recreated after exit 130",
    )
    job = _wait_condition(admin, ns, name, "Restarting")
    assert job["status"]["recreations"][pod]["lastExitCode"] == 130
    wait(lambda: "ExitedWithCode" in _reasons(admin, ns, name), "ExitedWithCode event")
    admin.set_pod_phase(ns, pod, "Running")
    admin.set_pod_phase(ns, pod, "Failed", exit_code=1)
    job = _wait_condition(admin, ns, name, "Failed")
    assert f"pod {pod}, container tensorflow, exit code 1" in condition(job, "Failed")["message"]
    # Failed under ExitCode 1-127: the pod is not replaced.
    assert admin.pods(ns, name)[pod]["metadata"]["uid"] == recreated["metadata"]["uid"]


def test_a_drained_replica_is_made_again_and_restarting_says_it_was_evicted(
    admin: Api, ns: str
) -> None:
    """`kubectl drain` evicts the pod (DisruptionTarget, EvictionByEvictionAPI, then a graceful
    delete its kubelet finishes): Restarting and a Warning event name the pod, its node and the
    eviction, also when a peer then exits (its collective gone); once the pod is gone its
    replica is made again, no failure counted for it."""
    name = unique("drain")
    workers = {"Worker": {"restartPolicy": "ExitCode", "replicas": 2}}
    pods = _start(admin, ns, tfjob(name, workers), 2)
    pod, peer = f"{name}-worker-1", f"{name}-worker-0"
    admin.set_pod_phase(ns, peer, "Running")
    path = f"{PODS.format(ns=ns)}/{pod}"
    uid = pods[pod]["metadata"]["uid"]
    admin.merge_patch(path, {"spec": {"nodeName": "node-2"}})  # bound: a kubelet ends it
    admin.set_pod_phase(ns, pod, "Running")
    _wait_condition(admin, ns, name, "Running")
    target = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
              "message": "Eviction API: evicting"}  # fmt: skip
    admin.merge_patch(f"{path}/status", {"status": {"conditions": [target]}})
    admin.call("DELETE", path)  # graceful: deletionTimestamp, the pod stays for its kubelet
    job = wait(
        lambda: (
            (j := admin.tfjob(ns, name))
            and "evicted" in ((condition(j, "Restarting") or {}).get("message") or "")
            and j
        ),
        "Restarting saying the replica was evicted",
    )
    message = condition(job, "Restarting")["message"]
    assert message == (
        f"TFJob {name} is restarting because 1 Worker replica(s) were evicted (pod {pod} "
        "(Worker 1) on node node-2, EvictionByEvictionAPI: Eviction API: evicting); each is "
        "made again once it has stopped."
    )
    events = [e for e in admin.events(ns, name) if e["message"] == message]
    assert len(events) == 1 and events[0]["type"] == "Warning", events
    assert admin.pods(ns, name)[pod]["metadata"]["uid"] == uid  # not replaced while it stops
    peer_uid = admin.pods(ns, name)[peer]["metadata"]["uid"]
    admin.set_pod_phase(ns, peer, "Failed", exit_code=143)  # stops with its evicted peer
    wait(
        lambda: (p := admin.pods(ns, name).get(peer)) and p["metadata"]["uid"] != peer_uid,
        "the peer made again",
    )
    assert condition(admin.tfjob(ns, name) or {}, "Restarting")["message"] == message
    admin.set_pod_phase(ns, pod, "Failed", exit_code=143)  # the kubelet: SIGTERM, exit 143
    admin.delete(f"{path}?gracePeriodSeconds=0")  # ... then it confirms (if not gone already)
    wait(
        lambda: (p := admin.pods(ns, name).get(pod)) and p["metadata"]["uid"] != uid and p,
        "the evicted replica made again",
    )
    job = dict(admin.tfjob(ns, name) or {})
    assert pod not in job["status"].get("recreations", {}), job["status"]  # no failure
    assert [e["message"] for e in admin.events(ns, name)].count(message) == 1


def test_a_pods_long_eviction_message_is_cut_in_the_condition_and_the_event(
    admin: Api, ns: str
) -> None:
    """Text of the pods (here an eviction's message of 4 KiB, as a kubelet under pressure may
    write) reaches the job's condition and event cut to 1,024 characters, saying so."""
    name = unique("long")
    pods = _start(admin, ns, tfjob(name, {"Worker": {"restartPolicy": "ExitCode"}}), 1)
    pod = f"{name}-worker-0"
    path = f"{PODS.format(ns=ns)}/{pod}"
    admin.merge_patch(path, {"spec": {"nodeName": "node-1"}})
    admin.set_pod_phase(ns, pod, "Running")
    target = {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
              "message": "x" * 4096}  # fmt: skip
    admin.merge_patch(f"{path}/status", {"status": {"conditions": [target]}})
    admin.call("DELETE", path)
    job = wait(
        lambda: (j := admin.tfjob(ns, name)) and condition(j, "Restarting") and j, "Restarting"
    )
    message = condition(job, "Restarting")["message"]
    assert len(message) == 1024, len(message)
    assert message.startswith(f"TFJob {name} is restarting because 1 Worker replica(s)")
    assert message.endswith("... (cut: longer than 1024 characters)")
    events = wait(
        lambda: [e for e in admin.events(ns, name) if e["message"] == message],
        "the event of the eviction",
    )
    assert len(events) == 1 and events[0]["type"] == "Warning", events
    assert pods[pod]["metadata"]["uid"] == admin.pods(ns, name)[pod]["metadata"]["uid"]


def test_backoff_limit_caps_exit_code_recreations(admin: Api, ns: str) -> None:
    name = unique("backoff")
    manifest = tfjob(name, {"Worker": {"restartPolicy": "ExitCode"}}, runPolicy={"backoffLimit": 2})
    _start(admin, ns, manifest, 1)
    pod = f"{name}-worker-0"
    uids = set()
    for attempt in range(2):
        current = wait(
            lambda: (p := admin.pods(ns, name).get(pod)) and p["metadata"]["uid"] not in uids and p,
            f"attempt {attempt} pod",
        )
        uids.add(current["metadata"]["uid"])
        admin.set_pod_phase(ns, pod, "Running")
        admin.set_pod_phase(ns, pod, "Failed", exit_code=137, reason="OOMKilled")
    job = _wait_condition(admin, ns, name, "Failed")
    message = condition(job, "Failed")["message"]
    assert message.startswith(f"Job {name} has failed because it has reached the specified backoff")
    assert "exit code 137" in message and "OOMKilled" in message
    assert job["status"]["recreations"][pod]["count"] == 2


def test_active_deadline_fires_on_time(admin: Api, ns: str) -> None:
    """No pod changes after start: only the operator's own timer can fail the job."""
    name = unique("deadline")
    manifest = tfjob(name, {"Worker": {}}, runPolicy={"activeDeadlineSeconds": 3})
    pods = _start(admin, ns, manifest, 1)
    _run_all(admin, ns, pods)
    job = _wait_condition(admin, ns, name, "Failed", timeout=15)
    failed = condition(job, "Failed")
    assert failed["message"] == (
        f"Job {name} has failed because it was active longer than specified deadline"
    )
    late = (_time(failed["lastTransitionTime"]) - _time(job["status"]["startTime"])).total_seconds()
    assert 3 <= late <= 5, f"deadline 3s fired after {late}s"
    wait(lambda: not admin.pods(ns, name), "running pod deleted after the deadline")


def test_ttl_deletes_the_finished_job(admin: Api, ns: str) -> None:
    name = unique("ttl")
    manifest = tfjob(name, {"Worker": {}}, runPolicy={"ttlSecondsAfterFinished": 1})
    pods = _start(admin, ns, manifest, 1)
    _run_all(admin, ns, pods)
    admin.set_pod_phase(ns, f"{name}-worker-0", "Succeeded")
    _wait_condition(admin, ns, name, "Succeeded")
    wait(lambda: admin.tfjob(ns, name) is None, "TFJob deleted after its TTL", timeout=10)
    # No garbage collector runs here: the operator removed the children itself.
    assert not admin.pods(ns, name)
    assert not admin.services(ns, name)
    assert not admin.policies(ns, name)


def test_a_deleted_jobs_pods_are_deleted_at_once_but_not_pods_it_orphaned(
    admin: Api, ns: str
) -> None:
    """`kubectl delete tfjob` (no finalizer): the operator deletes the job's pods, services and
    policy itself, so they stop when asked without waiting for the garbage collector (none runs
    here). A job
    that went through a finalizer, its pods orphaned meanwhile (what `--cascade=orphan` does),
    keeps them."""
    name = unique("gone")
    _start(admin, ns, tfjob(name, {"PS": {}, "Worker": {"replicas": 2}}), 3)
    admin.delete(f"{TFJOBS.format(ns=ns)}/{name}")
    wait(lambda: not admin.pods(ns, name), "the deleted job's pods deleted", timeout=20)
    wait(lambda: not admin.services(ns, name), "its services deleted", timeout=20)
    wait(lambda: not admin.policies(ns, name), "its NetworkPolicy deleted", timeout=20)

    kept = unique("kept")
    manifest = tfjob(kept, {"Worker": {}})
    manifest["metadata"]["finalizers"] = ["example.com/hold"]
    _start(admin, ns, manifest, 1)
    admin.delete(f"{TFJOBS.format(ns=ns)}/{kept}")  # held: a deletionTimestamp, still there
    pod = f"{PODS.format(ns=ns)}/{kept}-worker-0"
    admin.merge_patch(pod, {"metadata": {"ownerReferences": None}})  # orphaned
    admin.merge_patch(f"{TFJOBS.format(ns=ns)}/{kept}", {"metadata": {"finalizers": None}})
    wait(lambda: admin.tfjob(ns, kept) is None, "the held job gone", timeout=20)
    time.sleep(1)  # the operator has seen it go
    assert list(admin.pods(ns, kept)) == [f"{kept}-worker-0"]


@pytest.mark.parametrize(
    ("policy", "left"),
    [("None", {"ps-0", "worker-0", "worker-1"}), ("Running", {"worker-0"}), ("All", set())],
)
def test_clean_pod_policy(admin: Api, ns: str, policy: str, left: set[str]) -> None:
    name = unique(f"clean-{policy.lower()}")
    manifest = tfjob(
        name, {"PS": {}, "Worker": {"replicas": 2}}, runPolicy={"cleanPodPolicy": policy}
    )
    pods = _start(admin, ns, manifest, 3)
    _run_all(admin, ns, pods)
    admin.set_pod_phase(ns, f"{name}-worker-0", "Succeeded")
    _wait_condition(admin, ns, name, "Succeeded")
    expected = {f"{name}-{p}" for p in left}
    wait(lambda: set(admin.pods(ns, name)) == expected, f"pods left: {sorted(expected)}")
    wait(lambda: set(admin.services(ns, name)) == expected, "services left")


def test_suspend_and_resume(admin: Api, ns: str) -> None:
    name = unique("susp")
    pods = _start(admin, ns, tfjob(name, {"PS": {}, "Worker": {}}), 2)
    _run_all(admin, ns, pods)
    first = _wait_condition(admin, ns, name, "Running")["status"]["startTime"]
    admin.patch_tfjob(ns, name, {"spec": {"runPolicy": {"suspend": True}}})
    job = _wait_condition(admin, ns, name, "Suspended")
    wait(lambda: not admin.pods(ns, name) and not admin.services(ns, name), "all deleted")
    job = admin.tfjob(ns, name)
    assert condition(job, "Suspended")["reason"] == "TFJobSuspended"
    assert not condition(job, "Running")
    assert all(s["active"] == 0 for s in job["status"]["replicaStatuses"].values())
    time.sleep(1.1)  # so the reset startTime is visibly later (whole seconds)
    admin.patch_tfjob(ns, name, {"spec": {"runPolicy": {"suspend": False}}})
    wait(lambda: len(admin.pods(ns, name)) == 2, "pods recreated on resume")
    job = wait(
        lambda: (j := admin.tfjob(ns, name)) and not condition(j, "Suspended") and j, "resumed"
    )
    suspended = next(c for c in job["status"]["conditions"] if c["type"] == "Suspended")
    assert (suspended["status"], suspended["reason"]) == ("False", "TFJobResumed")
    assert _time(job["status"]["startTime"]) > _time(first)
    # the events are posted after the status write: wait for them rather than race the pass
    wait(
        lambda: {"TFJobSuspended", "TFJobResumed"} <= set(_reasons(admin, ns, name)),
        "TFJobSuspended and TFJobResumed events",
    )


def test_scale_up_and_down(admin: Api, ns: str) -> None:
    """2 -> 4 -> 1 workers (the field the scale subresource writes; the in-memory apiserver has
    no scale subresource, tests/operator/test_scale.py uses it on the real one): only the
    changed indices are made or deleted, the others keep their uid; one TFJobScaled each."""
    name = unique("scale")
    first = _start(admin, ns, tfjob(name, {"PS": {}, "Worker": {"replicas": 2}}), 3)
    uids = {n: p["metadata"]["uid"] for n, p in first.items()}

    def seen(count: int) -> bool:
        return ((admin.tfjob(ns, name) or {}).get("status") or {}).get("workerReplicas") == count

    wait(lambda: seen(2), "status.workerReplicas 2")
    admin.patch_tfjob(ns, name, {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 4}}}})
    want = {f"{name}-ps-0"} | {f"{name}-worker-{i}" for i in range(4)}
    four = wait(lambda: set(p := admin.pods(ns, name)) == want and p, "scaled up to 4 pods")
    wait(lambda: set(admin.services(ns, name)) == want, "scaled up to 4 services")
    assert {n: four[n]["metadata"]["uid"] for n in uids} == uids
    wait(lambda: seen(4), "status.workerReplicas 4")
    admin.patch_tfjob(ns, name, {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1}}}})
    want = {f"{name}-ps-0", f"{name}-worker-0"}
    one = wait(lambda: set(p := admin.pods(ns, name)) == want and p, "scaled down to 1 pod")
    wait(lambda: set(admin.services(ns, name)) == want, "1 worker service")
    assert {n: p["metadata"]["uid"] for n, p in one.items()} == {n: uids[n] for n in want}

    def scaled() -> list[str] | None:
        said = [e["message"] for e in admin.events(ns, name) if e["reason"] == "TFJobScaled"]
        return sorted(m.split(". ")[0] for m in said) if len(said) == 2 else None

    assert wait(scaled, "two TFJobScaled events") == [
        f"TFJob {name} scaled down from 4 to 1 Worker replicas",
        f"TFJob {name} scaled up from 2 to 4 Worker replicas",
    ]


def test_managed_by_other_controller_is_left_alone(admin: Api, ns: str) -> None:
    name = unique("other")
    manifest = tfjob(name, {"Worker": {}}, runPolicy={"managedBy": "example.com/other"})
    admin.create_tfjob(ns, manifest)
    # A job of ours created after it is handled, so the operator has seen both by then.
    ours = unique("ours")
    _start(admin, ns, tfjob(ours, {"Worker": {}}), 1)
    _wait_condition(admin, ns, ours, "Created")
    time.sleep(0.5)
    job = admin.tfjob(ns, name)
    assert not job.get("status")
    assert not admin.pods(ns, name)
    assert not admin.services(ns, name)
    assert not admin.events(ns, name)
