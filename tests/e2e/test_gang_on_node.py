"""Issue 23 on the real node, as a user sees it: gangs that cannot both fit, queues with a
quota, preemption with a checkpoint, and Kubeflow's own SDK gang flow.

Real: the one-node cluster (2 CPUs), the chart's operator switched to
`gangScheduling.schedulerName=scheduler-plugins` for this module (and back after), and
scheduler-plugins' scheduler and controller and Kueue (TFJob integration) started on the shared
cluster the way `taas-controlplane cluster up --gang scheduler-plugins --kueue` starts them
(`gang_helpers.scheduling_on`). CPU requests are sized from the node's free CPU at each test's
start, so that gangs compete for real: a gang of 3 fits the node, two do not.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_controlplane.build.busybox_images import TOOLBOX_IMAGE
from taas_controlplane.cluster.cluster import Cluster
from taas_controlplane.cluster.scheduling import SchedulingStack
from tests.builds import SCHEDULERS, needs
from tests.e2e.gang_helpers import (
    PRIORITY_LABEL,
    QUEUE_LABEL,
    assert_queued_for_quota,
    barrier_job,
    finished_at,
    free_millicpu,
    kueue_queue,
    scheduled_at,
    scheduling_on,
    wait_job_condition,
    workload_condition,
)
from tests.e2e.sdk_venv import sdk_python
from tests.harness.real_cluster import (
    REPO,
    condition,
    get_json,
    job_pods,
    wait_finished,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node]
GATE = "taas.dev/e2e-order"


@pytest.fixture(scope="module")
@needs(*SCHEDULERS)
def gangs(
    cluster: Cluster, operator: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchedulingStack]:
    with scheduling_on(cluster, tmp_path_factory.mktemp("scheduling")) as stack:
        yield stack


def _apply(cluster: Cluster, ns: str, *jobs: dict[str, Any]) -> None:
    for job in jobs:
        cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(job))


def _job(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    return dict(get_json(cluster, "-n", ns, "tfjob", name))


def _unschedulable(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
        for c in pod["status"].get("conditions") or []
    )


def test_two_gangs_without_a_gang_scheduler_can_deadlock(
    cluster: Cluster, gangs: SchedulingStack, ns: str
) -> None:
    """The default scheduler places pods one at a time. When the pods of two jobs arrive
    interleaved (forced here with a scheduling gate each, lifted A0, B0, A1, then the rest),
    each job holds part of the node and waits for the rest forever."""
    per = min(600, (free_millicpu(cluster) - 100) // 3)
    spec = {"schedulerName": "default-scheduler", "schedulingGates": [{"name": GATE}]}
    _apply(cluster, ns, *(barrier_job(n, 3, per, template_spec=spec) for n in ("a", "b")))
    wait(
        lambda: len(job_pods(cluster, ns, "a") + job_pods(cluster, ns, "b")) == 6,
        "6 gated pods",
        timeout=120.0,
        every=1.0,
    )
    order = ["a-worker-0", "b-worker-0", "a-worker-1", "b-worker-1", "a-worker-2", "b-worker-2"]
    for index, pod in enumerate(order):
        cluster.kubectl("patch", "pod", "-n", ns, pod, "--type=json",
                        "-p", '[{"op":"remove","path":"/spec/schedulingGates"}]')  # fmt: skip
        if index < 3:
            wait(
                lambda p=pod: scheduled_at(get_json(cluster, "-n", ns, "pod", p)),
                f"{pod} placed",
                timeout=120.0,
                every=1.0,
            )
    pods = {
        p["metadata"]["name"]: p for p in job_pods(cluster, ns, "a") + job_pods(cluster, ns, "b")
    }
    stuck = wait(
        lambda: (
            (
                found := [
                    p
                    for p in job_pods(cluster, ns, "a") + job_pods(cluster, ns, "b")
                    if _unschedulable(p)
                ]
            )
            and len(found) == 3
            and found
        ),
        "3 pods unschedulable",
        timeout=120.0,
        every=1.0,
    )
    assert {p["metadata"]["name"] for p in stuck} == set(order[3:]), pods.keys()
    # Each job says what holds it (its pods go to the default scheduler: no gang); nothing
    # finishes while the placed workers wait for peers.
    for name in ("a", "b"):
        running = wait_job_condition(
            cluster,
            ns,
            name,
            "Running",
            f"{name} saying it is not running",
            status="False",
            reason="Unschedulable",
        )
        assert "Insufficient cpu" in running["message"], running
    for _ in range(2):
        jobs = [_job(cluster, ns, n) for n in ("a", "b")]
        assert not any((condition(j, "Succeeded") or {}).get("status") == "True" for j in jobs)
        cluster.kubectl(
            "wait", "-n", ns, "--for=condition=Ready", "pod/a-worker-0", "--timeout=60s"
        )
        log = cluster.kubectl("logs", "-n", ns, "a-worker-0").stdout
        assert "workers reached" not in log, log
    cluster.kubectl("delete", "tfjob", "-n", ns, "a", "b", "--wait=false")


def test_two_gangs_under_coscheduling_run_one_after_the_other(
    cluster: Cluster, gangs: SchedulingStack, ns: str
) -> None:
    per = min(600, (free_millicpu(cluster) - 100) // 3)
    _apply(cluster, ns, barrier_job("first", 3, per), barrier_job("second", 3, per))
    for name in ("first", "second"):
        job = wait_finished(cluster, ns, name, timeout=240)
        assert (condition(job, "Succeeded") or {}).get("status") == "True", job["status"]
    spans = {}
    for name in ("first", "second"):
        pods = job_pods(cluster, ns, name)
        assert len(pods) == 3 and all(p["status"]["phase"] == "Succeeded" for p in pods)
        spans[name] = (
            min(scheduled_at(p) or 0 for p in pods),
            max(finished_at(p) or 0 for p in pods),
        )
    earlier, later = sorted(spans.values())
    # Never both at once: the later gang was placed only after the earlier one ended.
    assert later[0] >= earlier[1], spans
    events = get_json(cluster, "events", "-n", ns)["items"]
    waited = [e for e in events if e.get("reason") == "WaitingForGang"]
    assert waited and "waiting for 3 pods to be scheduled together" in waited[0]["message"], [
        e.get("reason") for e in events
    ]


def test_a_queue_with_quota_for_one_job_admits_the_second_when_the_first_finishes(
    cluster: Cluster, gangs: SchedulingStack, ns: str
) -> None:
    per = min(400, (free_millicpu(cluster) - 100) // 4)  # both jobs fit the node: the quota is
    queue, cleanup = kueue_queue(cluster, ns, cpu_milli=per * 5 // 2)  # the limit, not the CPUs
    try:
        labels = {QUEUE_LABEL: queue}
        _apply(cluster, ns, barrier_job("first", 2, per, hold_s=8, labels=labels))
        wait(
            lambda: len(job_pods(cluster, ns, "first")) == 2,
            "first admitted",
            timeout=120.0,
            every=1.0,
        )
        _apply(cluster, ns, barrier_job("second", 2, per, labels=labels))
        assert_queued_for_quota(cluster, ns, "second")
        first = wait_finished(cluster, ns, "first", timeout=180)
        assert (condition(first, "Succeeded") or {}).get("status") == "True"
        second = wait_finished(cluster, ns, "second", timeout=180)
        assert (condition(second, "Succeeded") or {}).get("status") == "True"
        resumed = condition(second, "Suspended") or {}
        assert (resumed.get("status"), resumed.get("reason")) == ("False", "TFJobResumed")
        ended = max(finished_at(p) or 0 for p in job_pods(cluster, ns, "first"))
        assert min(scheduled_at(p) or 0 for p in job_pods(cluster, ns, "second")) >= ended
    finally:
        cluster.kubectl(
            "delete", "tfjob", "-n", ns, "--all", "--wait=true", "--timeout=60s", check=False
        )
        cleanup()


def _queued_example(name: str, per: int, checkpoints: Path, labels: dict[str, str]) -> dict:
    """The TFJob of examples/gang/kueue-tfjob.yaml (mnist, 1 PS + workers, created suspended
    for Kueue) with one worker, `per` millicores each (a 2-CPU node), its queue and priority
    `labels`, and its model dir on a hostPath that outlives its pods, checkpointing every 2 s."""
    docs = yaml.safe_load_all((REPO / "examples" / "gang" / "kueue-tfjob.yaml").read_text())
    job = next(d for d in docs if d["kind"] == "TFJob")
    job["metadata"] = {"name": name, "labels": labels}
    job["spec"]["runPolicy"]["cleanPodPolicy"] = "None"
    env = {"TF_MAX_STEPS": "4000", "TF_LOGDIR": "/checkpoints/model"}
    env["TAAS_SAVE_CHECKPOINTS_SECS"] = "2"
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["replicas"] = 1
        pod = spec["template"]["spec"]
        container = pod["containers"][0]
        kept = [e for e in container["env"] if e["name"] not in env]
        container["env"] = kept + [{"name": k, "value": v} for k, v in env.items()]
        container["resources"] = {"requests": {"cpu": f"{per}m", "memory": "512Mi"}}
        container["volumeMounts"] = [{"name": "checkpoints", "mountPath": "/checkpoints"}]
        volume = {"path": str(checkpoints), "type": "Directory"}
        pod["volumes"] = [{"name": "checkpoints", "hostPath": volume}]
    return job


@pytest.mark.tensorflow
def test_a_higher_priority_job_preempts_a_lower_one_which_resumes_from_its_checkpoint(
    cluster: Cluster, gangs: SchedulingStack, trainer_image: str, ns: str
) -> None:
    per = min(400, (free_millicpu(cluster) - 100) // 4)
    queue, cleanup = kueue_queue(cluster, ns, cpu_milli=per * 5 // 2, preemption=True)
    low_class, high_class = f"low-{uuid.uuid4().hex[:6]}", f"high-{uuid.uuid4().hex[:6]}"
    checkpoints = Path(f"/tmp/taas-e2e-checkpoints-{uuid.uuid4().hex[:8]}")
    checkpoints.mkdir(mode=0o777)
    checkpoints.chmod(0o777)  # the trainer runs as a non-root user
    classes = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
         "metadata": {"name": n}, "value": v}
        for n, v in ((low_class, 100), (high_class, 1000))
    ]  # fmt: skip
    cluster.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": classes})
    )
    try:
        low_labels = {QUEUE_LABEL: queue, PRIORITY_LABEL: low_class}
        _apply(cluster, ns, _queued_example("low", per, checkpoints, low_labels))
        saved = wait(lambda: max(
                (step for f in (checkpoints / "model").glob("model.ckpt-*.index")
                 if (step := int(f.name.split("-")[1].split(".")[0])) > 0),
                default=None,
            ), "a checkpoint of low past step 0", timeout=300, every=1.0)  # fmt: skip
        high_labels = {QUEUE_LABEL: queue, PRIORITY_LABEL: high_class}
        _apply(cluster, ns, barrier_job("high", 2, per, hold_s=8, labels=high_labels))
        suspended = wait_job_condition(
            cluster, ns, "low", "Suspended", "low preempted", status="True"
        )
        assert suspended["reason"] == "TFJobSuspended"
        evicted = workload_condition(cluster, ns, "low", "Evicted") or {}
        assert evicted.get("reason") == "Preempted", evicted
        high = wait_finished(cluster, ns, "high", timeout=180)
        assert (condition(high, "Succeeded") or {}).get("status") == "True"
        low = wait_finished(cluster, ns, "low", timeout=600)
        assert (condition(low, "Succeeded") or {}).get("status") == "True", low["status"]
        log = cluster.kubectl("logs", "-n", ns, "low-worker-0").stdout
        done = re.search(r"training done: (\d+) local steps, global step (\d+)", log)
        assert done, log[-3000:]
        local, global_step = int(done.group(1)), int(done.group(2))
        # The resumed run started from the checkpoint saved before the preemption (or a later
        # one): it took at most the steps left after it.
        assert global_step >= 4000 and local <= global_step - saved + 1, (local, global_step, saved)
    finally:
        cluster.kubectl(
            "delete", "tfjob", "-n", ns, "--all", "--wait=true", "--timeout=90s", check=False
        )
        cluster.kubectl(
            "delete",
            "workloadpriorityclass",
            low_class,
            high_class,
            "--ignore-not-found",
            check=False,
        )
        cleanup()
        shutil.rmtree(checkpoints, ignore_errors=True)


def test_kubeflow_sdk_gang_flow(cluster: Cluster, gangs: SchedulingStack, ns: str) -> None:
    """Kubeflow's SDK (its own environment): a gang the node cannot hold stays Created with
    a reason; `update_job` lowering minAvailable lets it run to Succeeded."""
    per = (free_millicpu(cluster) - 100) * 6 // 10  # one worker fits, two do not
    program = REPO / "tests" / "e2e" / "programs" / "sdk_gang_flow.py"
    done = subprocess.run(
        [str(sdk_python()), str(program), cluster.kubeconfig, ns, str(per), TOOLBOX_IMAGE],
        capture_output=True,
        text=True,
        timeout=420,
    )
    stages = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    stuck, ran = stages
    assert stuck["created"] and not stuck["running"], stuck
    reasons = {c["reason"] for c in stuck["conditions"]}
    assert "WaitingForGang" in reasons, stuck["conditions"]
    assert ran["succeeded"], ran
