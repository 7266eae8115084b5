"""Migration from Kubeflow's training-operator: TaaS on Kubeflow's own TFJob CRD carries on with
the TFJobs, pods and services Kubeflow left behind (docs/deploy.md, `crds.install=false`).

Real: kube-apiserver + etcd (a control plane of this module's own, so Kubeflow's CRD never
replaces TaaS's on the session one), Kubeflow's real TFJob CRD read from the
`github.com/kubeflow/training-operator` v1.8.1 Go module, the operator as a subprocess.
Played by the tests (nothing else can exist here):
- Kubeflow's training-operator: the pods and headless services it creates for a TFJob (names,
  labels, owner references, TF_CONFIG as pkg/controller.v1/common/pod.go, service.go and
  tensorflow/tensorflow.go of v1.8.1 write them) and the status it writes (conditions with its
  reasons and messages, replicaStatuses, startTime);
- the kubelet: pod phases and exit codes, written through the pods/status subresource.

Finding: Kubeflow's structural schema has no `status.recreations`, so the apiserver prunes that
TaaS field from every status write. The operator notices (a warning in its log) and keeps the
counts it wrote in memory, so backoffLimit still caps recreations (ExitCode, evicted pods) while
it runs; only an operator restart forgets them (TaaS's CRD keeps them: step 3 of the migration).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from taas_controlplane.build.binaries import TRAINING_OPERATOR_VERSION, module_source
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.api.models import Recreation, ReplicaStatus, TFJobStatus
from taas_operator.planner import set_condition
from tests.harness.operator_run import (
    POLICIES,
    Api,
    OperatorProcess,
    condition,
    launch_operator,
    named_in_events,
    new_namespace,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]

KUBEFLOW_MODULE = "github.com/kubeflow/training-operator"
KUBEFLOW_CRD = "manifests/base/crds/kubeflow.org_tfjobs.yaml"
GROUP = "training.kubeflow.org"
PORT = 2222

StartTaas = Callable[[str], OperatorProcess]


# -- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kubeflow_crd() -> Path:
    """Kubeflow's own TFJob CRD, from the training-operator module in the Go module cache."""
    path = module_source(KUBEFLOW_MODULE, TRAINING_OPERATOR_VERSION) / KUBEFLOW_CRD
    assert path.is_file(), f"{path} missing from {KUBEFLOW_MODULE}@{TRAINING_OPERATOR_VERSION}"
    return path


@pytest.fixture(scope="module")
def plane(kubeflow_crd: Path) -> Iterator[ControlPlane]:
    """A control plane of its own with Kubeflow's TFJob CRD installed (never TaaS's)."""
    own = ControlPlane()
    own.start()
    try:
        own.kubectl("apply", "--server-side", "-f", str(kubeflow_crd))
        wait(lambda: _established(Api(own.kubeconfig)), "Kubeflow's CRD Established", timeout=60)
        yield own
    finally:
        own.stop()


def _established(api: Api) -> bool:
    crd = api.find("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tfjobs.kubeflow.org")
    conditions = ((crd or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


@pytest.fixture(scope="module")
def api(plane: ControlPlane) -> Api:
    return Api(plane.kubeconfig)


@pytest.fixture
def start_taas(
    plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StartTaas]:
    """`start_taas(ns)`: `taas operator` watching `ns`; stopped when the test ends."""
    started: list[OperatorProcess] = []
    logs = tmp_path_factory.mktemp("migration-operator")

    def start(ns: str) -> OperatorProcess:
        args = [f"--namespace={ns}", "--kubeconfig", plane.kubeconfig, "--health-port=0"]
        args.append("--metrics-port=0")
        proc = launch_operator(args, logs / f"operator-{len(started)}.log")
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


# -- playing Kubeflow's training-operator v1.8 ----------------------------------------------------
def user_tfjob(name: str, worker: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """1 PS + 2 workers as a Kubeflow user wrote it: nothing defaulted (no ports, no policies)."""
    container = {"name": "tensorflow", "image": "example.com/mnist:1"}
    replica = {"template": {"spec": {"containers": [container]}}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {
            "tfReplicaSpecs": {
                "PS": {"replicas": 1, **copy.deepcopy(replica)},
                "Worker": {"replicas": 2, **copy.deepcopy(replica), **(worker or {})},
            },
            **spec,
        },
    }


def _labels(job: str, rtype: str, index: int) -> dict[str, str]:
    """GenLabels + SetReplicaType/SetReplicaIndex (common/job_controller.go, pod.go)."""
    return {
        f"{GROUP}/operator-name": "tfjob-controller",
        f"{GROUP}/job-name": job,
        f"{GROUP}/replica-type": rtype.lower(),
        f"{GROUP}/replica-index": str(index),
    }


def _owner(job: dict[str, Any]) -> dict[str, Any]:
    """GenOwnerReference (common/job_controller.go)."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _tf_config(job: dict[str, Any], rtype: str, index: int) -> str:
    """genTFConfigJSONStr (tensorflow/tensorflow.go): hosts `<job>-<type>-<i>.<ns>.svc:2222`."""
    name, ns = job["metadata"]["name"], job["metadata"]["namespace"]
    cluster = {
        t.lower(): [f"{name}-{t.lower()}-{i}.{ns}.svc:{PORT}" for i in range(s["replicas"])]
        for t, s in job["spec"]["tfReplicaSpecs"].items()
    }
    task = {"type": rtype.lower(), "index": index}
    return json.dumps({"cluster": cluster, "task": task, "environment": "cloud"})


def kubeflow_objects(api: Api, job: dict[str, Any]) -> None:
    """Create the pods and headless services Kubeflow v1.8 creates for `job` (createNewPod,
    CreateNewService): no chief, so worker 0 carries job-role=master; the defaulted tfjob-port
    on the tensorflow container; the replica's restartPolicy on the pod (ExitCode -> Never)."""
    name, ns = job["metadata"]["name"], job["metadata"]["namespace"]
    for rtype, spec in job["spec"]["tfReplicaSpecs"].items():
        for index in range(spec["replicas"]):
            labels = _labels(name, rtype, index)
            pod_labels = dict(labels)
            if rtype == "Worker" and index == 0:
                pod_labels[f"{GROUP}/job-role"] = "master"
            pod_spec = copy.deepcopy(spec["template"]["spec"])
            tf = pod_spec["containers"][0]
            tf["ports"] = [{"name": "tfjob-port", "containerPort": PORT}]
            tf["env"] = [{"name": "TF_CONFIG", "value": _tf_config(job, rtype, index)}]
            policy = spec.get("restartPolicy", "Never")
            pod_spec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
            meta = {"name": f"{name}-{rtype.lower()}-{index}", "ownerReferences": [_owner(job)]}
            api.create(
                f"/api/v1/namespaces/{ns}/pods",
                {"metadata": {**meta, "labels": pod_labels}, "spec": pod_spec},
            )
            api.create(
                f"/api/v1/namespaces/{ns}/services",
                {
                    "metadata": {**meta, "labels": labels},
                    "spec": {
                        "clusterIP": "None",
                        "selector": labels,
                        "ports": [{"name": "tfjob-port", "port": PORT}],
                    },
                },
            )


def _cond(type_: str, status: str, reason: str, message: str, at: str) -> dict[str, str]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": at,
        "lastTransitionTime": at,
    }


def kubeflow_status(api: Api, job: dict[str, Any], succeeded: bool = False) -> dict[str, Any]:
    """Write the status Kubeflow v1.8 leaves (UpdateJobStatus, UpdateJobConditions): Created and
    Running with TFJob* reasons; a finished job has Running False and Succeeded True."""
    name, ns = job["metadata"]["name"], job["metadata"]["namespace"]
    at = "2025-01-02T03:04:05Z"
    conditions = [_cond("Created", "True", "TFJobCreated", f"TFJob {name} is created.", at)]
    running = f"TFJob {ns}/{name} is running."
    if succeeded:
        done = f"TFJob {ns}/{name} successfully completed."
        conditions += [
            _cond("Running", "False", "TFJobRunning", running, at),
            _cond("Succeeded", "True", "TFJobSucceeded", done, at),
        ]
        replicas = {"PS": {"active": 1}, "Worker": {"succeeded": 2}}
    else:
        conditions.append(_cond("Running", "True", "TFJobRunning", running, at))
        replicas = {"PS": {"active": 1}, "Worker": {"active": 2}}
    status: dict[str, Any] = {
        "conditions": conditions,
        "replicaStatuses": replicas,
        "startTime": at,
        "lastReconcileTime": at,
    }
    if succeeded:
        status["completionTime"] = at
    body = {**job, "status": status}
    return dict(
        api.call("PUT", f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs/{name}/status", body)
    )


def adopt_scenario(
    api: Api, ns: str, manifest: dict[str, Any], phases: dict[str, str], succeeded: bool = False
) -> dict[str, Any]:
    """A TFJob as Kubeflow ran it: the job, its pods and services, pod phases, its status."""
    job = api.create_tfjob(ns, manifest)
    kubeflow_objects(api, job)
    for pod, phase in phases.items():
        api.set_pod_phase(ns, pod, phase)
    return kubeflow_status(api, job, succeeded)


# -- assertions helpers -------------------------------------------------------------------------
def _uids(items: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {name: obj["metadata"]["uid"] for name, obj in items.items()}


def _policy(api: Api, ns: str, name: str) -> dict[str, Any] | None:
    """The NetworkPolicy TaaS adds to every job: proof that a reconcile pass has run."""
    return api.find(f"{POLICIES.format(ns=ns)}/{name}")


# -- tests --------------------------------------------------------------------------------------
def test_crd_is_kubeflows_and_prunes_only_taas_fields(api: Api) -> None:
    """The finding behind the backoff fix: of every status field TaaS writes, Kubeflow's schema
    drops `status.recreations` (silently: the write is accepted), and `status.state` /
    `stateReason` (only the State column reads those; every TaaS tool derives the state from
    the conditions, `api.state`), and keeps the rest as is."""
    crd = api.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tfjobs.kubeflow.org")
    status_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert "recreations" not in status_schema["properties"]
    assert "x-kubernetes-preserve-unknown-fields" not in status_schema
    ns = new_namespace(api, "prune")
    job = api.create_tfjob(ns, user_tfjob(unique("pruned")))
    # Stored as written: Kubeflow's CRD fills in no TaaS default (cleanPodPolicy, ports...).
    assert "cleanPodPolicy" not in (job["spec"].get("runPolicy") or {})
    at = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    status = TFJobStatus(start_time=at, completion_time=at)
    set_condition(status, "Created", "True", "TFJobCreated", "TFJob x is created.", at)
    set_condition(status, "Failed", "True", "TFJobFailed", "TFJob x has failed.", at)
    status.replica_statuses = {"PS": ReplicaStatus(active=1), "Worker": ReplicaStatus(failed=2)}
    status.recreations = {"x-worker-0": Recreation(count=2, lastPodUID="u", last_exit_code=137)}
    written = status.to_dict()
    path = f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs/{job['metadata']['name']}/status"
    stored = api.call("PUT", path, {**job, "status": written})
    assert written["state"] == "Failed"
    pruned = ("recreations", "state", "stateReason")
    assert stored["status"] == {k: v for k, v in written.items() if k not in pruned}


def test_running_job_is_taken_over_and_completed(api: Api, start_taas: StartTaas) -> None:
    """Kubeflow's pods and services are adopted as they are (same uids), the status carries on,
    the kubelet's pod phases drive it to Succeeded, and TaaS's cleanPodPolicy default (Running:
    the field is unset) stops the parameter server."""
    ns = new_namespace(api, "adopt")
    name = unique("mnist")
    ps, w0, w1 = f"{name}-ps-0", f"{name}-worker-0", f"{name}-worker-1"
    before = adopt_scenario(
        api, ns, user_tfjob(name), {ps: "Running", w0: "Running", w1: "Running"}
    )
    pods, services = _uids(api.pods(ns, name)), _uids(api.services(ns, name))
    assert sorted(pods) == sorted(services) == sorted([ps, w0, w1])

    operator = start_taas(ns)
    wait(lambda: _policy(api, ns, name), "TaaS's first pass over the adopted job")
    assert _uids(api.pods(ns, name)) == pods, "TaaS must not recreate Kubeflow's pods"
    assert _uids(api.services(ns, name)) == services, "nor its services"
    job = api.tfjob(ns, name)
    assert job is not None and condition(job, "Running")["reason"] == "TFJobRunning"
    assert job["status"]["startTime"] == before["status"]["startTime"]
    assert condition(job, "Created") == condition(before, "Created")

    # One worker finishes: TaaS writes the counts (its own status write on Kubeflow's schema).
    api.set_pod_phase(ns, w1, "Succeeded", exit_code=0)
    job = wait(
        lambda: (
            (j := api.tfjob(ns, name))
            and j["status"]["replicaStatuses"].get("Worker", {}).get("succeeded") == 1
            and j
        ),
        "TaaS to count the finished worker",
    )
    assert job["status"]["replicaStatuses"]["Worker"]["active"] == 1
    assert job["status"]["replicaStatuses"]["PS"]["active"] == 1
    assert condition(job, "Running") is not None

    # Worker 0 exits 0: the job succeeded; the running PS pod and its service are deleted.
    api.set_pod_phase(ns, w0, "Succeeded", exit_code=0)
    job = wait(lambda: (j := api.tfjob(ns, name)) and condition(j, "Succeeded") and j, "Succeeded")
    assert job["status"]["completionTime"]
    running = next(c for c in job["status"]["conditions"] if c["type"] == "Running")
    assert running["status"] == "False"
    wait(lambda: ps not in api.pods(ns, name), "the PS pod deleted (cleanPodPolicy)")
    wait(lambda: ps not in api.services(ns, name), "the PS service deleted")
    assert _uids(api.pods(ns, name)) == {w0: pods[w0], w1: pods[w1]}
    assert _uids(api.services(ns, name)) == {w0: services[w0], w1: services[w1]}
    events = api.events(ns, name)
    assert named_in_events(events) == [] and named_in_events(events, noun="service") == []
    assert "Traceback" not in operator.log()


def test_backoff_limit_counts_recreations_although_the_schema_prunes_them(
    api: Api, start_taas: StartTaas
) -> None:
    """ExitCode workers killed by a signal (exit 137) are recreated; `status.recreations` is
    pruned by Kubeflow's schema, yet backoffLimit 2 still fails the job at the second one."""
    ns = new_namespace(api, "backoff")
    name = unique("retry")
    ps, w0, w1 = f"{name}-ps-0", f"{name}-worker-0", f"{name}-worker-1"
    manifest = user_tfjob(name, {"restartPolicy": "ExitCode"}, runPolicy={"backoffLimit": 2})
    adopt_scenario(api, ns, manifest, {ps: "Running", w0: "Running", w1: "Running"})
    first = api.pods(ns, name)[w1]["metadata"]["uid"]
    operator = start_taas(ns)
    wait(lambda: _policy(api, ns, name), "TaaS's first pass over the adopted job")

    api.set_pod_phase(ns, w1, "Failed", exit_code=137, reason="OOMKilled")
    second = wait(
        lambda: (
            (p := api.pods(ns, name).get(w1))
            and p["metadata"]["uid"] != first
            and p["metadata"]["uid"]
        ),
        "the failed worker recreated",
    )
    job = api.tfjob(ns, name)
    assert job is not None and condition(job, "Failed") is None
    assert "recreations" not in job["status"], "Kubeflow's schema prunes it (the finding)"
    wait(lambda: "prunes status.recreations" in operator.log(), "the operator's warning")

    api.set_pod_phase(ns, w1, "Running")
    api.set_pod_phase(ns, w1, "Failed", exit_code=137, reason="OOMKilled")
    job = wait(
        lambda: (j := api.tfjob(ns, name)) and condition(j, "Failed") and j,
        "the job failed at backoffLimit 2",
    )
    assert "backoff limit" in condition(job, "Failed")["message"]
    assert api.pods(ns, name).get(w1, {}).get("metadata", {}).get("uid") in (second, None)
    # one recreation reported (the first failure's), none for the one at the limit
    assert named_in_events(api.events(ns, name)) == [w1]


def test_job_kubeflow_finished_stays_finished(api: Api, start_taas: StartTaas) -> None:
    """A job Kubeflow had already completed keeps its status byte for byte; nothing is
    recreated. Its leftover running PS pod (Kubeflow's cleanPodPolicy default None) stays when
    the job says None, and is stopped under TaaS's default (Running) when the field is unset."""
    ns = new_namespace(api, "done")
    kept, cleaned = unique("kept"), unique("cleaned")
    jobs = {
        kept: user_tfjob(kept, runPolicy={"cleanPodPolicy": "None"}),
        cleaned: user_tfjob(cleaned),
    }
    before: dict[str, dict[str, Any]] = {}
    uids: dict[str, dict[str, str]] = {}
    for name, manifest in jobs.items():
        phases = {
            f"{name}-ps-0": "Running",
            f"{name}-worker-0": "Succeeded",
            f"{name}-worker-1": "Succeeded",
        }
        before[name] = adopt_scenario(api, ns, manifest, phases, succeeded=True)
        uids[name] = _uids(api.pods(ns, name))

    start_taas(ns)
    for name in jobs:
        wait(lambda n=name: _policy(api, ns, n), f"TaaS's first pass over {name}")
    wait(lambda: f"{cleaned}-ps-0" not in api.pods(ns, cleaned), "the leftover PS stopped")
    for name in jobs:
        job = api.tfjob(ns, name)
        assert job is not None
        assert job["status"] == before[name]["status"], f"{name}: status rewritten"
        assert job["metadata"]["resourceVersion"] == before[name]["metadata"]["resourceVersion"]
        assert named_in_events(api.events(ns, name)) == [], f"{name}: a pod created"
    assert _uids(api.pods(ns, kept)) == uids[kept]
    expected = {k: v for k, v in uids[cleaned].items() if k != f"{cleaned}-ps-0"}
    assert _uids(api.pods(ns, cleaned)) == expected
