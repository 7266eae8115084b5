"""What the fault runs share: an API client, TFJob creation, a stand-in kubelet that writes pod
phases, and a comparable snapshot of every job's end state.

    admin_api(plane) -> ApiClient
    create_namespace(api, name)
    create_tfjobs(api, namespace, names, ps, workers)      # at once, like workload (b)
    list_tfjobs(api, namespace) -> dict[name, body]
    set_pod_phase(api, namespace, pod, phase, exit_code=None)
    drive_to_success(api, namespace, names, timeout_s)     # Running, then worker 0 exits 0
    JobState / job_states(api, namespace) -> dict[name, JobState]
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from kubernetes import client, config
from pydantic import BaseModel

from bench.harness.workloads import IMAGE, Workload, create_jobs
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from tests.harness.waiting import wait

JOB_LABEL = "training.kubeflow.org/job-name"


def admin_api(plane: ControlPlane, pool: int = 16) -> client.ApiClient:
    configuration = client.Configuration()
    config.load_kube_config(config_file=plane.kubeconfig, client_configuration=configuration)
    configuration.connection_pool_maxsize = pool
    return client.ApiClient(configuration)


def create_namespace(api: client.ApiClient, name: str) -> None:
    client.CoreV1Api(api).create_namespace({"metadata": {"name": name}})


def create_tfjobs(
    api: client.ApiClient, namespace: str, jobs: int, ps: int = 1, workers: int = 3
) -> list[str]:
    """Create `jobs` TFJobs (`bench-b-NNNN`) at once from 16 threads; return their names."""
    workload = Workload(key="b", title="fault", jobs=jobs, ps=ps, workers=workers)
    create_jobs(api, namespace, workload)
    return workload.job_names()


def list_tfjobs(api: client.ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    items = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "kubeflow.org", "v1", namespace, "tfjobs"
    )["items"]
    return {item["metadata"]["name"]: item for item in items}


def condition_true(job: dict[str, Any], type_: str) -> bool:
    return any(
        c.get("type") == type_ and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def set_pod_phase(
    api: client.ApiClient, namespace: str, pod: str, phase: str, exit_code: int | None = None
) -> None:
    """Write the pod's status as a kubelet would (the only faked part of these runs)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if phase == "Running":
        state: dict[str, Any] = {"running": {"startedAt": now}}
    else:
        code = 0 if exit_code is None else exit_code
        state = {
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": now,
                "finishedAt": now,
            }
        }
    status = {
        "phase": phase,
        "containerStatuses": [
            {
                "name": "tensorflow",
                "ready": phase == "Running",
                "restartCount": 0,
                "image": IMAGE,
                "imageID": "",
                "state": state,
            }
        ],
    }
    client.CoreV1Api(api).patch_namespaced_pod_status(pod, namespace, {"status": status})


def _pods(api: client.ApiClient, namespace: str) -> list[Any]:
    return list(client.CoreV1Api(api).list_namespaced_pod(namespace).items)


def _all(names: Iterable[str], jobs: dict[str, dict[str, Any]], type_: str) -> bool:
    return all(name in jobs and condition_true(jobs[name], type_) for name in names)


def drive_to_success(
    api: client.ApiClient, namespace: str, names: list[str], timeout_s: float
) -> None:
    """Every pod Running -> every job Running; worker 0 exits 0 -> every job Succeeded and
    its running pods cleaned up (cleanPodPolicy Running, the TaaS default)."""
    pods = [p.metadata.name for p in _pods(api, namespace)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: set_pod_phase(api, namespace, p, "Running"), pods))
    wait(
        lambda: _all(names, list_tfjobs(api, namespace), "Running"),
        "jobs Running",
        timeout=timeout_s,
        every=0.5,
    )
    chiefs = [f"{name}-worker-0" for name in names]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: set_pod_phase(api, namespace, p, "Succeeded", 0), chiefs))

    def finished() -> bool:
        if not _all(names, list_tfjobs(api, namespace), "Succeeded"):
            return False
        return all(p.status.phase in ("Succeeded", "Failed") for p in _pods(api, namespace))

    wait(finished, "jobs Succeeded and their running pods cleaned up", timeout=timeout_s, every=0.5)


class JobState(BaseModel):
    """What must be the same with and without a fault: conditions, counts, objects left."""

    conditions: list[tuple[str, str, str]]
    replica_statuses: dict[str, dict[str, int]]
    pods: list[str]
    services: list[str]
    has_start_time: bool
    has_completion_time: bool


def job_states(api: client.ApiClient, namespace: str) -> dict[str, JobState]:
    """Every job's state, with the names of the pods and services it still has."""
    core = client.CoreV1Api(api)
    pods: dict[str, list[str]] = {}
    services: dict[str, list[str]] = {}
    for pod in core.list_namespaced_pod(namespace).items:
        pods.setdefault((pod.metadata.labels or {}).get(JOB_LABEL, ""), []).append(
            pod.metadata.name
        )
    for svc in core.list_namespaced_service(namespace).items:
        services.setdefault((svc.metadata.labels or {}).get(JOB_LABEL, ""), []).append(
            svc.metadata.name
        )
    states = {}
    for name, job in list_tfjobs(api, namespace).items():
        status = job.get("status") or {}
        states[name] = JobState(
            conditions=[
                (c["type"], c["status"], c.get("reason", "")) for c in status.get("conditions", [])
            ],
            replica_statuses={
                k: {f: int(v.get(f, 0)) for f in ("active", "succeeded", "failed")}
                for k, v in (status.get("replicaStatuses") or {}).items()
            },
            pods=sorted(pods.get(name, [])),
            services=sorted(services.get(name, [])),
            has_start_time=bool(status.get("startTime")),
            has_completion_time=bool(status.get("completionTime")),
        )
    return states
