"""TFJobs that ask for a TensorBoard, for the tests of the operator's TensorBoard objects and of
`taas tensorboard`.

    board_job(name, annotation, model_dir, volume) -> a TFJob manifest (PS + 2 workers)
    warnings_of(admin, ns, name, reason) -> the messages of the job's events of that reason
"""

from __future__ import annotations

from typing import Any

from tests.harness.operator_run import Api, tfjob

DEPLOYMENTS = "/apis/apps/v1/namespaces/{ns}/deployments"
IMAGE = "registry.example/tensorboard:1"


def board_job(name: str, annotation: str | None, model_dir: str, volume: dict[str, Any]) -> dict:
    container = {
        "name": "tensorflow",
        "image": "example.com/trainer:1",
        "env": [{"name": "TF_LOGDIR", "value": model_dir}],
        "volumeMounts": [{"name": "model", "mountPath": "/model"}],
    }
    manifest = tfjob(name, {"PS": {}, "Worker": {"replicas": 2, "containers": [container]}})
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["volumes"] = [
        {"name": "model", **volume}
    ]
    if annotation is not None:
        manifest["metadata"]["annotations"] = {"taas.dev/tensorboard": annotation}
    return manifest


def warnings_of(admin: Api, ns: str, name: str, reason: str) -> list[str]:
    return [e["message"] for e in admin.events(ns, name) if e["reason"] == reason]
