"""TFJobs whose chief serves training progress on 127.0.0.1, for the operator's progress tests.

progress_job(admin, ns, name, port)             # PS + 2 workers, all Running at 127.0.0.1
start_chief(admin, ns, name, port, **pod_spec)  # one worker (the chief), Running
progress_of(admin, ns, name) -> status.progress ({} when none)
"""

from __future__ import annotations

from typing import Any

from tests.harness.operator_run import (
    Api,
    condition,
    tfjob,
)
from tests.harness.waiting import wait


def progress_job(admin: Api, ns: str, name: str, port: int) -> None:
    env = [{"name": "TAAS_PROGRESS_PORT", "value": str(port)}]
    containers = [{"name": "tensorflow", "image": "example.com/t:1", "env": env}]
    admin.create_tfjob(
        ns, tfjob(name, {"PS": {}, "Worker": {"replicas": 2, "containers": containers}})
    )
    wait(lambda: len(admin.pods(ns, name)) == 3, "3 pods")
    for pod in admin.pods(ns, name):
        admin.set_pod_phase(ns, pod, "Running", pod_ip="127.0.0.1")
    wait(lambda: condition(admin.tfjob(ns, name), "Running"), "Running")
    # Running is written once one replica runs; the status settles when it counts all three.
    wait(lambda: all_active(admin.tfjob(ns, name)), "every replica active in the status")


def all_active(job: dict[str, Any] | None) -> bool:
    replicas = ((job or {}).get("status") or {}).get("replicaStatuses") or {}
    active = {kind: (replicas.get(kind) or {}).get("active") for kind in ("PS", "Worker")}
    return active == {"PS": 1, "Worker": 2}


def progress_of(admin: Api, ns: str, name: str) -> dict[str, Any]:
    return dict(((admin.tfjob(ns, name) or {}).get("status") or {}).get("progress") or {})


def start_chief(admin: Api, ns: str, name: str, port: int, **pod_spec: Any) -> None:
    """A one-worker job (worker 0: the chief) serving progress on `port`, running at 127.0.0.1."""
    env = [{"name": "TAAS_PROGRESS_PORT", "value": str(port)}]
    containers = [{"name": "tensorflow", "image": "example.com/t:1", "env": env}]
    manifest = tfjob(name, {"Worker": {"replicas": 1, "containers": containers}})
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"].update(pod_spec)
    admin.create_tfjob(ns, manifest)
    wait(lambda: len(admin.pods(ns, name)) == 1, "the pod")
    admin.set_pod_phase(ns, f"{name}-worker-0", "Running", pod_ip="127.0.0.1")
    wait(lambda: condition(admin.tfjob(ns, name), "Running"), "Running")
