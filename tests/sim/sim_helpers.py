"""What the simulated-cluster scenarios share: TFJobs whose fake containers exit as told,
listing pods and jobs (waiting is tests.harness.waiting's `wait`).

    sim_tfjob(name, ps, workers, worker_plan={...}, restart_policy="Never", worker_resources=None)
    create_namespace(api, name) / create_tfjob(api, ns, manifest)
    tfjobs(api, ns) -> dict[name, body]     pods(api, ns) -> list[V1Pod]
    end_pods(api, ns, names, exit_code)     # annotate running pods: their container exits now
    condition(job, type_) -> dict | None     # True conditions only
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from kubernetes import client

from taas_controlplane.sim.annotations import EXIT_CODE

T = TypeVar("T")
IMAGE = "example.com/trainer:1"
JOB_LABEL = "training.kubeflow.org/job-name"


def sim_tfjob(
    name: str,
    ps: int,
    workers: int,
    worker_plan: dict[str, str] | None = None,
    restart_policy: str = "Never",
    worker_resources: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A TFJob; its workers' template carries `worker_plan` (sim annotations), PS run on."""

    def replica(count: int, annotations: dict[str, str], resources: dict[str, str]):
        container: dict[str, Any] = {"name": "tensorflow", "image": IMAGE}
        container["resources"] = {"requests": resources, "limits": resources}
        template: dict[str, Any] = {"spec": {"containers": [container]}}
        if annotations:
            template["metadata"] = {"annotations": annotations}
        return {"replicas": count, "restartPolicy": restart_policy, "template": template}

    small = {"cpu": "500m", "memory": "1Gi"}
    specs: dict[str, Any] = {}
    if ps:
        specs["PS"] = replica(ps, {}, small)
    specs["Worker"] = replica(workers, worker_plan or {}, worker_resources or small)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": specs},
    }


def create_namespace(api: client.ApiClient, name: str) -> None:
    client.CoreV1Api(api).create_namespace({"metadata": {"name": name}})


def create_tfjob(api: client.ApiClient, namespace: str, manifest: dict[str, Any]) -> None:
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "kubeflow.org", "v1", namespace, "tfjobs", manifest
    )


def create_tfjobs(api: client.ApiClient, namespace: str, manifests: list[dict[str, Any]]) -> None:
    """All at once, from 16 threads."""
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda m: create_tfjob(api, namespace, m), manifests))


def tfjobs(api: client.ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    items = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "kubeflow.org", "v1", namespace, "tfjobs"
    )["items"]
    return {item["metadata"]["name"]: item for item in items}


def pods(api: client.ApiClient, namespace: str, job: str | None = None) -> list[Any]:
    selector = f"{JOB_LABEL}={job}" if job else JOB_LABEL
    return list(client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=selector).items)


def condition(job: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    for cond in ((job or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_ and cond.get("status") == "True":
            return dict(cond)
    return None


def end_pods(api: client.ApiClient, namespace: str, names: Iterable[str], exit_code: int) -> None:
    """Their containers exit now with `exit_code` (the simulated kubelet reads the annotation)."""
    core = client.CoreV1Api(api)
    patch = {"metadata": {"annotations": {EXIT_CODE: str(exit_code)}}}
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda n: core.patch_namespaced_pod(n, namespace, patch), names))
