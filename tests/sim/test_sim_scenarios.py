"""Scenarios on the simulated cluster (CI-sized): TFJobs running across many nodes, finishing
with the exit codes their fake containers are given, and replicas no node can hold.

(d) one TFJob of 5 PS + 50 workers over 20 nodes: apply -> every pod Running -> Succeeded;
(e) 10 TFJobs x 20 replicas at once, then all finishing;
exit codes: Succeeded, Failed (restartPolicy Never) and a replica recreated (ExitCode, 137);
(g) a TFJob asking for more nvidia.com/gpu than the nodes have says so on the TFJob and in
`taas get`.
The operator is the real one, unchanged; kwok plays the kubelets (conftest.py).
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

from taas_controlplane.sim.annotations import container_plan
from tests.harness.waiting import wait
from tests.sim.sim_helpers import (
    condition,
    create_namespace,
    create_tfjob,
    create_tfjobs,
    end_pods,
    pods,
    sim_tfjob,
    tfjobs,
)

pytestmark = [pytest.mark.sim, pytest.mark.controlplane, pytest.mark.timeout(600)]


def _namespace(sim, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    create_namespace(sim.api, name)
    return name


def _events(sim, ns: str, job: str) -> str:
    return sim.kubectl(
        "get", "events", "-n", ns, "--field-selector", f"involvedObject.name={job}", "-o", "json"
    ).stdout


def _running(pod) -> bool:
    return pod.status.phase == "Running" and pod.spec.node_name is not None


def test_d_one_job_of_5_ps_and_50_workers_over_20_nodes(sim, operator) -> None:
    ns = _namespace(sim, "sim-d")
    started = time.monotonic()
    create_tfjob(sim.api, ns, sim_tfjob("big", ps=5, workers=50))
    found = wait(
        lambda: (lambda ps: len(ps) == 55 and all(_running(p) for p in ps) and ps)(
            pods(sim.api, ns, "big")
        ),
        "all 55 pods Running",
        timeout=120,
        every=0.5,
    )
    all_running = time.monotonic() - started
    nodes = {p.spec.node_name for p in found}
    assert len(nodes) >= 15, f"55 pods on only {len(nodes)} of 20 nodes: {sorted(nodes)}"
    wait(
        lambda: condition(tfjobs(sim.api, ns)["big"], "Running"),
        "the job Running",
        timeout=30,
        every=0.5,
    )
    # worker 0 last: its success ends the job, and cleanPodPolicy Running deletes the rest
    others = [p.metadata.name for p in found if "-worker-" in p.metadata.name]
    others.remove("big-worker-0")
    end_pods(sim.api, ns, others, 0)
    wait(
        lambda: sum(p.status.phase == "Succeeded" for p in pods(sim.api, ns, "big")) == 49,
        "49 workers Succeeded",
        timeout=60,
        every=0.5,
    )
    end_pods(sim.api, ns, ["big-worker-0"], 0)
    job = wait(
        lambda: condition(tfjobs(sim.api, ns)["big"], "Succeeded") and tfjobs(sim.api, ns)["big"],
        "the job Succeeded",
        timeout=120,
        every=0.5,
    )
    total = time.monotonic() - started
    assert job["status"]["replicaStatuses"]["Worker"]["succeeded"] == 50
    # cleanPodPolicy Running (the default): the PS pods go, the workers' stay as they ended
    wait(
        lambda: not [p for p in pods(sim.api, ns, "big") if "-ps-" in p.metadata.name],
        "the PS pods deleted",
        timeout=60,
        every=0.5,
    )
    print(
        f"\n(d) 55 pods on {len(nodes)} nodes: all Running {all_running:.1f}s, "
        f"Succeeded {total:.1f}s"
    )


def test_e_ten_jobs_of_20_replicas_at_once_all_finish(sim, operator) -> None:
    ns = _namespace(sim, "sim-e")
    names = [f"job-{i:02d}" for i in range(10)]
    plan = container_plan(exit_code=0, run_seconds=8)
    started = time.monotonic()
    create_tfjobs(sim.api, ns, [sim_tfjob(n, ps=2, workers=18, worker_plan=plan) for n in names])
    wait(
        lambda: all(condition(j, "Succeeded") for j in tfjobs(sim.api, ns).values()),
        "all 10 jobs Succeeded",
        timeout=240,
        every=1.0,
    )
    total = time.monotonic() - started
    jobs = tfjobs(sim.api, ns)
    assert sorted(jobs) == names
    for name, job in jobs.items():
        assert condition(job, "Failed") is None, name
        assert job["status"]["replicaStatuses"]["Worker"]["succeeded"] == 18, name
        assert not job["status"].get("recreations"), f"{name} recreated pods"
    print(f"\n(e) 10 jobs x 20 replicas: all Succeeded {total:.1f}s after apply")


def test_exit_codes_succeed_fail_and_recreate(sim, operator) -> None:
    ns = _namespace(sim, "sim-x")
    create_tfjob(sim.api, ns, sim_tfjob("fails", 0, 2, container_plan(exit_code=3, run_seconds=1)))
    create_tfjob(sim.api, ns, sim_tfjob("retries", 1, 2, restart_policy="ExitCode"))
    job = wait(
        lambda: condition(tfjobs(sim.api, ns).get("fails"), "Failed"),
        "`fails` Failed",
        timeout=90,
        every=0.5,
    )
    assert "exit code 3" in job["message"], job

    wait(
        lambda: len([p for p in pods(sim.api, ns, "retries") if _running(p)]) == 3,
        "`retries` Running",
        timeout=90,
        every=0.5,
    )
    first = {p.metadata.name: p.metadata.uid for p in pods(sim.api, ns, "retries")}
    end_pods(sim.api, ns, ["retries-worker-1"], 137)  # killed: ExitCode recreates it
    # Restarting lasts only until the new pod runs (Running replaces it): its event stays
    wait(
        lambda: "TFJobRestarting" in _events(sim, ns, "retries"),
        "a TFJobRestarting event",
        timeout=60,
        every=0.5,
    )
    replaced = wait(
        lambda: next(
            (
                p
                for p in pods(sim.api, ns, "retries")
                if p.metadata.name == "retries-worker-1"
                and p.metadata.uid != first["retries-worker-1"]
                and _running(p)
            ),
            None,
        ),
        "worker 1 recreated and Running",
        timeout=60,
        every=0.5,
    )
    assert replaced.metadata.uid != first["retries-worker-1"]
    status = tfjobs(sim.api, ns)["retries"]["status"]
    assert status["recreations"]["retries-worker-1"]["lastExitCode"] == 137
    end_pods(sim.api, ns, ["retries-worker-1"], 0)  # worker 0 last: it ends the job
    wait(
        lambda: any(
            p.metadata.name == "retries-worker-1" and p.status.phase == "Succeeded"
            for p in pods(sim.api, ns, "retries")
        ),
        "worker 1 Succeeded",
        timeout=60,
        every=0.5,
    )
    end_pods(sim.api, ns, ["retries-worker-0"], 0)
    wait(
        lambda: condition(tfjobs(sim.api, ns)["retries"], "Succeeded"),
        "`retries` Succeeded",
        timeout=60,
        every=0.5,
    )


def test_g_unschedulable_replicas_show_on_the_tfjob_and_in_taas_get(sim, operator) -> None:
    ns = _namespace(sim, "sim-g")
    gpus = {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "8"}
    # 4 nodes with 8 GPUs each: 4 of these 7 workers fit, 3 cannot be placed
    create_tfjob(sim.api, ns, sim_tfjob("greedy", 0, 7, worker_resources=gpus))
    running = wait(
        lambda: next(
            (
                c
                for c in (tfjobs(sim.api, ns)["greedy"].get("status") or {}).get("conditions", [])
                if c["type"] == "Running"
                and c.get("reason") == "Unschedulable"
                and c["message"].startswith("TFJob " + ns + "/greedy is not running: 3 of 7")
            ),
            None,
        ),
        "Running False, reason Unschedulable, 3 of 7",
        timeout=90,
        every=0.5,
    )
    assert running["status"] == "False"
    assert "3 of 7 Worker pods unschedulable: 0/20 nodes are available" in running["message"]
    assert "Insufficient nvidia.com/gpu" in running["message"]
    placed = [p for p in pods(sim.api, ns, "greedy") if _running(p)]
    assert len(placed) == 4

    events = sim.kubectl(
        "get", "events", "-n", ns, "--field-selector", "involvedObject.kind=TFJob", "-o", "json"
    ).stdout
    assert "3 of 7 Worker pods unschedulable" in events

    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "taas_operator.cli",
            "get",
            "greedy",
            "-n",
            ns,
            "--kubeconfig",
            sim.kubeconfig,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[1].split()[:3] == ["greedy", "Waiting", "Unschedulable"], shown.stdout
    assert lines[2].startswith("Unschedulable: TFJob " + ns + "/greedy is not running: 3 of 7")
