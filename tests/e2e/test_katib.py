"""Katib's hyperparameter search with TaaS TFJobs as its trials, on the one-node cluster.

Katib v0.19 (taas_controlplane.cluster.katib: PostgreSQL, db-manager and katib-controller on the
host, the goptuna suggestion and the file metrics collector in pods, all built from Katib's Go
module) runs beside the session's TaaS operator. The Experiment is the one under
examples/hyperparameter_search: a learning-rate search whose trials are TFJobs running a
trainer-library program; the metric is what the program prints, read by the StdOut collector
Katib's pod webhook injects into the TFJob's primary pod (worker 0, `job-role: master`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from taas_controlplane.build.busybox_images import TOOLBOX_IMAGE
from taas_controlplane.cluster.cluster import Cluster
from taas_controlplane.cluster.katib import KatibOptions, KatibStack
from taas_controlplane.cluster.katib.config import INJECTION_LABEL
from tests.builds import KATIB, SCHEDULERS
from tests.e2e.gang_helpers import QUEUE_LABEL, kueue_queue, scheduling_on
from tests.harness.real_cluster import (
    REPO,
    condition,
    get_json,
    python_pod_output,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node, pytest.mark.builds(*KATIB, *SCHEDULERS)]
EXAMPLE = REPO / "examples" / "hyperparameter_search" / "experiment.yaml"
COLLECTOR = "metrics-logger-and-collector"  # the sidecar's name (Katib's inject webhook)


@pytest.fixture(scope="module")
def katib(
    cluster: Cluster, operator: str, trainer_image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KatibStack]:
    """Katib started after the chart (whose TFJob CRD it needs), stopped at the end."""
    directory = tmp_path_factory.mktemp("katib")
    stack = KatibStack(
        cluster.plane, directory, cluster.network, cluster.load_image, KatibOptions(enabled=True)
    )
    with stack:
        yield stack


@pytest.fixture
def katib_ns(cluster: Cluster, ns: str) -> str:
    """A fresh namespace where Katib's pod webhook injects its collector."""
    cluster.kubectl("label", "namespace", ns, f"{INJECTION_LABEL}=enabled")
    return ns


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    found = [c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_]
    return found[-1] if found else {}


def _time(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _most_at_once(trials: list[dict[str, Any]]) -> int:
    """The most trials that ran at the same time (from their start and completion times)."""
    events = []
    for trial in trials:
        events.append((_time(trial["status"]["startTime"]), 1))
        events.append((_time(trial["status"]["completionTime"]), -1))
    running = most = 0
    for _, change in sorted(events, key=lambda e: (e[0], e[1])):
        running += change
        most = max(most, running)
    return most


def _loss(trial: dict[str, Any]) -> float:
    metrics = trial["status"]["observation"]["metrics"]
    return float(next(m for m in metrics if m["name"] == "loss")["latest"])


def _one_trial_experiment(name: str, script: str, run_policy: dict[str, Any]) -> dict[str, Any]:
    """The example's Experiment cut to one trial whose TFJob is one toolbox worker running
    `script` (a shell line; `${trialParameters.learningRate}` in it is Katib's to fill)."""
    experiment = yaml.safe_load(EXAMPLE.read_text())
    experiment["metadata"]["name"] = name
    experiment["spec"].update(parallelTrialCount=1, maxTrialCount=1, maxFailedTrialCount=0)
    worker = {
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "tensorflow",
                        "image": TOOLBOX_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["sh", "-c", script],
                    }
                ]
            }
        },
    }
    experiment["spec"]["trialTemplate"]["trialSpec"]["spec"] = {
        "runPolicy": run_policy,
        "tfReplicaSpecs": {"Worker": worker},
    }
    return experiment


def _run_to_end(
    cluster: Cluster, ns: str, experiment: dict[str, Any], timeout: float = 600
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Apply `experiment`, wait until it has finished; it and its trials."""
    name = experiment["metadata"]["name"]
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(experiment))

    def finished() -> dict[str, Any] | None:
        got = get_json(cluster, "-n", ns, "experiment", name)
        done = any(_condition(got, t).get("status") == "True" for t in ("Succeeded", "Failed"))
        return got if done else None

    done = dict(wait(finished, f"Experiment {name}", timeout=timeout, every=2))
    selector = f"katib.kubeflow.org/experiment={name}"
    return done, list(get_json(cluster, "-n", ns, "trials", "-l", selector)["items"])


def test_a_learning_rate_search_over_tfjob_trials_keeps_the_trial_with_the_lowest_loss(
    cluster: Cluster, katib: KatibStack, katib_ns: str
) -> None:
    started = time.monotonic()
    done, trials = _run_to_end(cluster, katib_ns, yaml.safe_load(EXAMPLE.read_text()), 1200)
    print(f"experiment finished in {time.monotonic() - started:.0f}s")
    assert _condition(done, "Succeeded").get("status") == "True", done.get("status")
    assert len(trials) == 4, [t["metadata"]["name"] for t in trials]
    for trial in trials:
        assert _condition(trial, "Succeeded").get("status") == "True", trial.get("status")
    assert _most_at_once(trials) == 2  # parallelTrialCount

    # The optimal trial is the one whose program printed the lowest loss.
    losses = {t["metadata"]["name"]: _loss(t) for t in trials}
    optimal = done["status"]["currentOptimalTrial"]
    assert optimal["bestTrialName"] == min(losses, key=losses.__getitem__), (optimal, losses)
    best = next(m for m in optimal["observation"]["metrics"] if m["name"] == "loss")
    assert float(best["latest"]) == min(losses.values())

    # What TaaS gave Katib: each trial's TFJob owned by its Trial, Succeeded; the primary pod
    # (worker 0, job-role master) carried the collector and the trial's learning rate.
    for trial in trials:
        trial_name = trial["metadata"]["name"]
        job = get_json(cluster, "-n", katib_ns, "tfjob", trial_name)
        owner = job["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"], owner.get("controller")) == (
            "Trial", trial["metadata"]["uid"], True,
        )  # fmt: skip
        assert _condition(job, "Succeeded").get("status") == "True"
        pod = get_json(cluster, "-n", katib_ns, "pod", f"{trial_name}-worker-0")
        owner = pod["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"]) == ("TFJob", job["metadata"]["uid"])
        labels = pod["metadata"]["labels"]
        assert labels["training.kubeflow.org/job-role"] == "master"
        assert labels["training.kubeflow.org/replica-type"] == "worker"
        assert pod["spec"]["shareProcessNamespace"] is True
        containers = {c["name"]: c for c in pod["spec"]["containers"]}
        assert COLLECTOR in containers, list(containers)
        ended = {c["name"]: c["state"]["terminated"] for c in pod["status"]["containerStatuses"]}
        assert ended[COLLECTOR]["exitCode"] == 0, ended  # it reported, then the pod ended
        env = {e["name"]: e.get("value") for e in containers["tensorflow"]["env"]}
        assignment = {a["name"]: a["value"] for a in trial["spec"]["parameterAssignments"]}
        assert env["TAAS_LEARNING_RATE"] == assignment["lr"]


def test_a_failing_trial_is_failed_with_the_tfjobs_message(
    cluster: Cluster, katib: KatibStack, katib_ns: str
) -> None:
    experiment = _one_trial_experiment(
        "fails", "echo lr ${trialParameters.learningRate}; exit 3", {}
    )
    _, (trial,) = _run_to_end(cluster, katib_ns, experiment)
    job = get_json(cluster, "-n", katib_ns, "tfjob", trial["metadata"]["name"])
    job_failed = _condition(job, "Failed")
    assert job_failed.get("status") == "True", job.get("status")
    assert "exit code 3" in job_failed["message"], job_failed
    failed = _condition(trial, "Failed")
    assert failed.get("status") == "True", trial.get("status")
    assert failed["message"].endswith(f"Job message: {job_failed['message']}"), failed


def test_clean_pod_policy_all_waits_for_the_collector_to_report(
    cluster: Cluster, katib: KatibStack, katib_ns: str
) -> None:
    """cleanPodPolicy All deletes the job's pods when it ends; the job ends when the primary
    pod has, which is after the collector read `loss=` and reported it."""
    experiment = _one_trial_experiment(
        "clean-all",
        # One command (a subshell): Katib redirects the output of the line's last command only.
        "(echo rate ${trialParameters.learningRate}; sleep 2; echo loss=0.25; sleep 1)",
        {"cleanPodPolicy": "All"},
    )
    _, (trial,) = _run_to_end(cluster, katib_ns, experiment)
    assert _condition(trial, "Succeeded").get("status") == "True", trial.get("status")
    assert _loss(trial) == 0.25
    selector = f"training.kubeflow.org/job-name={trial['metadata']['name']}"

    def removed() -> bool:
        return not get_json(cluster, "-n", katib_ns, "pods", "-l", selector)["items"]

    wait(removed, "the trial's pods removed (cleanPodPolicy All)", timeout=60, every=1.0)


#: What a pod that is no trial's tries against db-manager (run with `python -c` in the trainer
#: image, whose TensorFlow brings grpcio): the gate's three methods for TRIAL, db-manager's own
#: port directly; one JSON line of each call's outcome. It first waits (at most 60 s) until the
#: gate knows its address: a container can start before its kubelet has written the pod's IP
#: to the apiserver, and the gate then finds no pod there (refused as well, for that reason).
_INTRUDER = """
import json, time, grpc
def field(number, payload):
    return bytes([number << 3 | 2, len(payload)]) + payload
metric = field(1, b"loss") + field(2, b"987.65")
log = field(1, field(1, b"2026-12-02T14:00:00Z") + field(2, metric))
report = field(1, TRIAL.encode()) + field(2, log)
def call(address, method, request):
    try:
        with grpc.insecure_channel(address) as channel:
            channel.unary_unary("/api.v1.beta1.DBManager/" + method)(request, timeout=20)
        return "OK"
    except grpc.RpcError as err:
        return err.code().name + ": " + (err.details() or "")
deadline = time.monotonic() + 60
while True:
    reported = call(GATE, "ReportObservationLog", report)
    if "(found: none)" not in reported or time.monotonic() > deadline:
        break
    time.sleep(2)
print(json.dumps({
    "report": reported,
    "get": call(GATE, "GetObservationLog", field(1, TRIAL.encode())),
    "delete": call(GATE, "DeleteObservationLog", field(1, TRIAL.encode())),
    "direct": call(DIRECT, "DeleteObservationLog", field(1, TRIAL.encode())),
}))
"""


def test_a_pod_that_is_no_trials_can_neither_write_nor_delete_observation_logs(
    cluster: Cluster, katib: KatibStack, katib_ns: str, trainer_image: str
) -> None:
    """Issue 39: db-manager took any pod's writes and deletes. A trial reports loss 0.25 through
    the gate; then a plain pod of the same namespace tries to report 987.65 for that trial,
    read it and delete it through the gate, and to reach db-manager itself: refused each time,
    and the trial's log is as the trial left it (read as katib-controller reads it)."""
    experiment = _one_trial_experiment(
        "observed",
        "(echo rate ${trialParameters.learningRate}; sleep 2; echo loss=0.25; sleep 1)",
        {},
    )
    _, (trial,) = _run_to_end(cluster, katib_ns, experiment)
    assert _loss(trial) == 0.25
    gate, manager = katib.gate_address, katib.db_manager_address
    assert gate is not None and manager is not None
    direct = f"{gate.rsplit(':', 1)[0]}:{manager.rsplit(':', 1)[1]}"  # db-manager's port, bridged
    name = trial["metadata"]["name"]
    script = f"TRIAL, GATE, DIRECT = {name!r}, {gate!r}, {direct!r}\n" + _INTRUDER
    output = python_pod_output(cluster, katib_ns, "intruder", trainer_image, script)
    tried = json.loads(output.strip().splitlines()[-1])
    assert tried["report"].startswith("PERMISSION_DENIED: "), tried
    assert "carries no katib.kubeflow.org/trial label" in tried["report"]
    for method in ("get", "delete"):
        assert tried[method].startswith("PERMISSION_DENIED: "), tried
        assert "pods may only report observation logs" in tried[method]
    assert tried["direct"].startswith("UNAVAILABLE"), tried  # db-manager is on loopback only

    # read as katib-controller does: from the host, through the gate
    request = bytes([0x0A, len(name)]) + name.encode()
    with grpc.insecure_channel(gate) as channel:
        read = channel.unary_unary("/api.v1.beta1.DBManager/GetObservationLog")
        logs = bytes(read(request, timeout=20))
    assert b"0.25" in logs and b"987.65" not in logs, logs


def test_trials_queued_by_kueue_run_one_at_a_time_within_the_quota(
    cluster: Cluster, katib: KatibStack, katib_ns: str, tmp_path: Path
) -> None:
    """Kueue in front: the trials' TFJobs carry a LocalQueue's label; with quota for one, Kueue
    keeps the second suspended until the first has finished, and both trials succeed."""
    experiment = _one_trial_experiment(
        "queued", "(echo rate ${trialParameters.learningRate}; sleep 5; echo loss=0.5)", {}
    )
    experiment["spec"].update(parallelTrialCount=2, maxTrialCount=2)
    trial_spec = experiment["spec"]["trialTemplate"]["trialSpec"]
    worker = trial_spec["spec"]["tfReplicaSpecs"]["Worker"]
    worker["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "100m", "memory": "64Mi"}
    }
    with scheduling_on(cluster, tmp_path / "scheduling"):
        queue, cleanup = kueue_queue(cluster, katib_ns, cpu_milli=150)  # one trial at a time
        try:
            trial_spec["metadata"] = {"labels": {QUEUE_LABEL: queue}}
            done, trials = _run_to_end(cluster, katib_ns, experiment)
            assert _condition(done, "Succeeded").get("status") == "True", done.get("status")
            jobs = [
                get_json(cluster, "-n", katib_ns, "tfjob", t["metadata"]["name"]) for t in trials
            ]
        finally:
            cluster.kubectl("delete", "experiment", "-n", katib_ns, "--all", check=False)
            cleanup()
    assert len(trials) == 2
    for trial in trials:
        assert _condition(trial, "Succeeded").get("status") == "True", trial.get("status")
        assert _loss(trial) == 0.5
    # Kueue created both suspended and resumed each when admitted: the second only once the
    # first had finished (the quota holds one).
    resumed = [condition(j, "Suspended") or {} for j in jobs]
    assert all((r.get("status"), r.get("reason")) == ("False", "TFJobResumed") for r in resumed)
    first, second = sorted(
        zip((_time(r["lastTransitionTime"]) for r in resumed), jobs, strict=True),
        key=lambda pair: pair[0],
    )
    assert second[0] >= _time(first[1]["status"]["completionTime"]), (first, second)
