"""Level-triggered and idempotent: the operator SIGKILLed mid-job and started again, deleted pods
and services recreated, a stored spec the models refuse (applied under a looser CRD) failed with
the field named -- never a crash or a retry loop.

No kubelet runs: tests write pod status through the pods/status subresource. The invalid-spec
test swaps the CRD for a schema-less one for a moment (the only way to store what today's CRD
refuses) and puts the real one back.
"""

from __future__ import annotations

import collections
import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from tests.harness.operator_run import (
    SERVICES,
    Api,
    OperatorProcess,
    StartOperator,
    condition,
    named_in_events,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(150)]


@pytest.fixture(scope="module")
def watched(admin: Api, start_operator: StartOperator) -> tuple[str, OperatorProcess]:
    name = new_namespace(admin, "res")
    return name, start_operator(name)


def _created(admin: Api, ns: str, name: str) -> collections.Counter[str]:
    """How often the operator reported creating each pod of the job."""
    return collections.Counter(named_in_events(admin.events(ns, name)))


def _uid(admin: Api, ns: str, job: str, pod: str) -> str | None:
    found = admin.pods(ns, job).get(pod)
    return found["metadata"]["uid"] if found else None


def test_sigkill_and_restart_no_duplicates_job_completes(
    admin: Api, start_operator: StartOperator
) -> None:
    ns = new_namespace(admin, "kill")
    first = start_operator(ns)
    name = unique("killed")
    admin.create_tfjob(
        ns, tfjob(name, {"PS": {}, "Worker": {"replicas": 2, "restartPolicy": "OnFailure"}})
    )
    pods = wait(lambda: len(p := admin.pods(ns, name)) == 3 and p, "3 pods")
    wait(lambda: len(admin.services(ns, name)) == 3, "3 services")
    for pod in pods:
        admin.set_pod_phase(ns, pod, "Running")
    wait(lambda: condition(admin.tfjob(ns, name), "Running"), "Running")

    first.kill()  # SIGKILL: no shutdown handlers run
    assert not first.alive()
    old_w0 = pods[f"{name}-worker-0"]["metadata"]["uid"]
    admin.set_pod_phase(ns, f"{name}-worker-0", "Failed", exit_code=137, reason="Evicted")
    admin.delete(f"/api/v1/namespaces/{ns}/pods/{name}-worker-1")
    admin.delete(f"{SERVICES.format(ns=ns)}/{name}-ps-0")

    start_operator(ns)
    expected = {f"{name}-ps-0", f"{name}-worker-0", f"{name}-worker-1"}
    wait(
        lambda: (
            set(admin.pods(ns, name)) == expected
            and _uid(admin, ns, name, f"{name}-worker-0") not in (None, old_w0)
        ),
        "worker-0 recreated and worker-1 back",
    )
    wait(lambda: set(admin.services(ns, name)) == expected, "the PS service back")
    job = wait(lambda: condition(j := admin.tfjob(ns, name), "Restarting") and j, "Restarting")
    assert job["status"]["recreations"][f"{name}-worker-0"]["count"] == 1
    # Each pod was created exactly as often as it had to be: nothing twice after the restart.
    assert _created(admin, ns, name) == {
        f"{name}-ps-0": 1,
        f"{name}-worker-0": 2,
        f"{name}-worker-1": 2,
    }
    for pod in expected:
        admin.set_pod_phase(ns, pod, "Running")
    admin.set_pod_phase(ns, f"{name}-worker-0", "Succeeded")
    job = wait(lambda: condition(j := admin.tfjob(ns, name), "Succeeded") and j, "Succeeded")
    assert job["status"]["recreations"][f"{name}-worker-0"]["count"] == 1


def test_deleted_pod_and_service_are_recreated(
    admin: Api, watched: tuple[str, OperatorProcess]
) -> None:
    ns, _ = watched
    name = unique("gone")
    admin.create_tfjob(ns, tfjob(name, {"PS": {}, "Worker": {}}))
    pods = wait(lambda: len(p := admin.pods(ns, name)) == 2 and p, "2 pods")
    services = wait(lambda: len(s := admin.services(ns, name)) == 2 and s, "2 services")
    pod, svc = f"{name}-ps-0", f"{name}-worker-0"
    admin.delete(f"/api/v1/namespaces/{ns}/pods/{pod}")
    admin.delete(f"{SERVICES.format(ns=ns)}/{svc}")
    wait(
        lambda: _uid(admin, ns, name, pod) not in (None, pods[pod]["metadata"]["uid"]),
        "the deleted pod recreated",
    )
    new = wait(
        lambda: (
            (s := admin.services(ns, name).get(svc))
            and s["metadata"]["uid"] != services[svc]["metadata"]["uid"]
            and s
        ),
        "the deleted service recreated",
    )
    assert new["spec"]["clusterIP"] == "None"


def _schemaless(crd: dict[str, Any]) -> dict[str, Any]:
    """The TFJob CRD with no validation: what an old CRD could have let in."""
    loose = copy.deepcopy(crd)
    for version in loose["spec"]["versions"]:
        version["schema"] = {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        }
    return loose


@pytest.fixture
def loose_crd(
    control_plane: ControlPlane, tfjob_crd: Path, watched: tuple[str, OperatorProcess]
) -> Iterator[None]:
    """A CRD that lets any spec in, for the test; then the jobs it let in are deleted (a TFJob
    no client can decode, left in the session's apiserver, stops every later informer of
    TFJobs: Kueue's failed to list them, and CI's Kueue tests with it), and the CRD put back."""
    crd = yaml.safe_load(tfjob_crd.read_text())
    control_plane.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "-",
        input=yaml.safe_dump(_schemaless(crd)),
    )
    try:
        yield
    finally:
        control_plane.kubectl("delete", "tfjobs", "--all", "-n", watched[0], "--wait=true")
        control_plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(tfjob_crd))


def test_invalid_stored_spec_fails_the_job_once(
    admin: Api, watched: tuple[str, OperatorProcess], loose_crd: None
) -> None:
    ns, operator = watched
    name = unique("bad")
    manifest = tfjob(
        name,
        {
            "Chief": {},
            "Worker": {"containers": [{"name": "trainer", "image": "example.com/t:1"}]},
        },
    )
    manifest["spec"]["tfReplicaSpecs"]["Master"] = manifest["spec"]["tfReplicaSpecs"]["Chief"]
    wait(lambda: _try_create(admin, ns, manifest), "the loose CRD to accept the bad job")
    job = wait(lambda: condition(j := admin.tfjob(ns, name), "Failed") and j, "Failed")
    failed = condition(job, "Failed")
    assert failed["reason"] == "InvalidTFJobSpec"
    assert failed["message"].startswith(f"TFJob {ns}/{name} has an invalid spec: ")
    assert "Chief and Master are both set; fix: keep only one of them" in failed["message"]
    assert "no container is named 'tensorflow'" in failed["message"]
    assert not admin.pods(ns, name)
    # A job handled after it proves the operator is alive and has moved on ...
    after = unique("after")
    admin.create_tfjob(ns, tfjob(after, {"Worker": {}}))
    wait(lambda: admin.pods(ns, after), "a later job handled")
    # ... and the bad one got exactly one event and one status write.
    events = [e for e in admin.events(ns, name) if e["reason"] == "InvalidTFJobSpec"]
    assert len(events) == 1 and events[0]["type"] == "Warning"
    assert (
        admin.tfjob(ns, name)["metadata"]["resourceVersion"] == job["metadata"]["resourceVersion"]
    )
    assert operator.alive()
    assert "has an invalid spec" in operator.log()


_TF = "spec.tfReplicaSpecs.Worker.template.spec.containers[0]"
#: Pod templates the pod builder cannot read (issue 11): what to set, the field named.
_BROKEN_TEMPLATES = {
    "env-map": ({"env": {"A": "1"}}, f'{_TF}.env: Invalid value: "object"'),
    "env-strings": ({"env": ["A=1"]}, f'{_TF}.env[0]: Invalid value: "string"'),
    "ports-map": ({"ports": {"tfjob-port": 2222}}, f'{_TF}.ports: Invalid value: "object"'),
    "port-abc": ({"ports": [{"containerPort": "abc"}]}, f"{_TF}.ports[0].containerPort"),
    "labels-list": ({"labels": ["a=b"]}, "spec.tfReplicaSpecs.Worker.template.metadata.labels"),
    "annotations-string": (
        {"annotations": "a=b"},
        "spec.tfReplicaSpecs.Worker.template.metadata.annotations",
    ),
}


def _broken(name: str, what: dict[str, Any]) -> dict[str, Any]:
    container = {"name": "tensorflow", "image": "example.com/trainer:1"}
    meta = {k: v for k, v in what.items() if k in ("labels", "annotations")}
    container.update({k: v for k, v in what.items() if k not in meta})
    manifest = tfjob(name, {"PS": {}, "Worker": {"containers": [container]}})
    if meta:
        manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] = meta
    return manifest


def test_pod_template_stored_before_its_schema_fails_the_job_once(
    admin: Api, watched: tuple[str, OperatorProcess], loose_crd: None
) -> None:
    """Jobs stored while the CRD let any pod template in (env as a map, labels as a list, ...):
    each ends Failed with one event naming the replica and the field, no pod is made, and the
    operator does not retry them (no further status write, no second event)."""
    ns, operator = watched
    names = {case: unique(case) for case in _BROKEN_TEMPLATES}
    for case, (what, _) in _BROKEN_TEMPLATES.items():
        manifest = _broken(names[case], what)
        wait(lambda m=manifest: _try_create(admin, ns, m), "the loose CRD to accept it")
    jobs = {}
    for case, name in names.items():
        jobs[case] = wait(
            lambda n=name: condition(j := admin.tfjob(ns, n), "Failed") and j, f"{case} Failed"
        )
    for case, (_, field) in _BROKEN_TEMPLATES.items():
        failed = condition(jobs[case], "Failed")
        assert failed["reason"] == "InvalidTFJobSpec", failed
        assert failed["message"].startswith(f"TFJob {ns}/{names[case]} has an invalid spec: ")
        assert field in failed["message"], (case, failed["message"])
        assert not admin.pods(ns, names[case])
    # A job handled after them proves the operator has moved on ...
    after = unique("after")
    admin.create_tfjob(ns, tfjob(after, {"Worker": {}}))
    wait(lambda: admin.pods(ns, after), "a later job handled")
    # ... and each broken one got exactly one event and one status write.
    for case, name in names.items():
        events = [e for e in admin.events(ns, name) if e["reason"] == "InvalidTFJobSpec"]
        assert len(events) == 1 and events[0]["type"] == "Warning", (case, events)
        assert "spec.tfReplicaSpecs.Worker.template" in events[0]["message"]
        stored = admin.tfjob(ns, name)["metadata"]["resourceVersion"]
        assert stored == jobs[case]["metadata"]["resourceVersion"], case
        # one pass rejected it (its log line; the event's own line repeats the message)
        assert operator.log().count(f"] TFJob {ns}/{name} has an invalid spec") == 1, case
    assert operator.alive()
    assert "Traceback" not in operator.log()


def _try_create(admin: Api, ns: str, manifest: dict[str, Any]) -> bool:
    try:
        admin.create_tfjob(ns, manifest)
    except RuntimeError:
        return False  # the apiserver may still validate with the old schema for a moment
    return True


PEERING_CRDS = (
    Path(__file__).resolve().parents[2] / "charts" / "taas" / "crds" / "kopf-peerings.yaml"
)


def test_two_replicas_with_peering_only_one_acts(
    admin: Api, control_plane: ControlPlane, start_operator: StartOperator
) -> None:
    """`--peering NAME` (the chart's replicaCount > 1): one replica works, the other waits."""
    control_plane.kubectl("apply", "--server-side", "-f", str(PEERING_CRDS))
    control_plane.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/kopfpeerings.kopf.dev"
    )
    ns = new_namespace(admin, "peer")
    admin.create(
        f"/apis/kopf.dev/v1/namespaces/{ns}/kopfpeerings",
        {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": "taas"}},
    )
    replicas = [
        start_operator(ns, args=("--peering", "taas", "--log-level", "DEBUG")) for _ in range(2)
    ]
    # kopf starts every replica paused; the highest priority resumes, the others stay paused.
    ranked = sorted(replicas, key=_priority)
    paused, active = ranked
    wait(
        lambda: _peering_active(active.log()) and not _peering_active(paused.log()),
        "the highest-priority replica active, the other paused",
    )
    name = unique("peer")
    admin.create_tfjob(ns, tfjob(name, {"PS": {}, "Worker": {}}))
    wait(lambda: len(admin.pods(ns, name)) == 2, "2 pods")
    wait(lambda: condition(admin.tfjob(ns, name), "Created"), "Created")
    wait(lambda: len(_created(admin, ns, name)) == 2, "2 pods reported created")
    assert f"reconciling {ns}/{name}" in active.log()
    assert f"reconciling {ns}/{name}" not in paused.log()
    assert all(r.alive() for r in replicas)


def _priority(replica: OperatorProcess) -> int:
    match = re.search(r"peering 'taas' \(priority (\d+)\)", replica.log())
    assert match, replica.log()[-2000:]
    return int(match.group(1))


def _peering_active(log: str) -> bool:
    """kopf's last word on peering was "Resuming" (not "Pausing", and not nothing)."""
    return log.rfind("Resuming operations after the pause") > log.rfind("Pausing operations")
