"""A seeded training job on real nodes, and the probes that follow its pods when one of their
nodes is lost: the node-loss benchmark (bench.operator.nodeloss) and the node tests
(tests/e2e/test_node_loss.py) run the same scenario with them.

    shared_volume(directory, ns) -> [PersistentVolume, PersistentVolumeClaim]   (ReadWriteMany)
    seeded_job(example, name, trainer_image, avoid=, node=, toleration_s=, grace_s=) -> TFJob
    chief_pod(job); checkpoint_step(model_dir); first_step(log, since); resumed(log)
    outcome(log) -> Outcome (test loss and accuracy)
    node_ready / pod_uid / node_once_running / running_elsewhere / moved_or_done (cluster, ...)
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel

from taas_controlplane.cluster.cluster import Cluster

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "tests" / "e2e" / "programs" / "seeded_digits.py"
JOB_LABEL = "training.kubeflow.org/job-name"
HOSTNAME = "kubernetes.io/hostname"
CHECKPOINT_STEPS = 50
MAX_STEPS = 600
#: A progress line of the chief: "[worker:0] step 10 global 60/600 loss 0.31 ...".
PROGRESS = re.compile(r"\] step \d+ global (\d+)/\d+ loss ([0-9.]+)")
RESUMED = re.compile(r"chief; resuming from checkpoint \S+-(\d+)")
T = TypeVar("T")


def shared_volume(directory: Path, ns: str, claim: str = "model") -> list[dict[str, Any]]:
    """A ReadWriteMany PersistentVolume of the host directory `directory` (every node of this
    machine sees it: it stands in for NFS) bound to the claim `claim` in `ns`."""
    name = f"nfs-{ns}"
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "hostPath": {"path": str(directory), "type": "Directory"},
            "claimRef": {"namespace": ns, "name": claim},
        },
    }
    bound = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": claim, "namespace": ns},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": name,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    return [volume, bound]


def seeded_job(
    example: str,
    name: str,
    trainer_image: str,
    *,
    avoid: str | None = None,
    node: str | None = None,
    toleration_s: int | None = None,
    grace_s: int | None = None,
) -> dict[str, Any]:
    """The repository's example (no evaluator; MWMS with 3 workers) running the seeded program
    from the ConfigMap `seeded-digits`, its model dir `/model/<name>` on the claim `model`,
    a checkpoint every CHECKPOINT_STEPS steps. Its replicas spread over the nodes (never onto a
    tainted one), but `avoid`; or all on `node`. `toleration_s` / `grace_s`: how long its pods
    tolerate their node not ready or unreachable, and their termination grace (None:
    Kubernetes' defaults, 300 s and 30 s)."""
    job = yaml.safe_load((REPO / "examples" / "keras_digits" / example).read_text())
    job["metadata"]["name"] = name
    specs = job["spec"]["tfReplicaSpecs"]
    specs.pop("Evaluator", None)
    if "PS" not in specs:
        specs["Worker"]["replicas"] = 3
    spread = {
        "maxSkew": 1,
        "topologyKey": HOSTNAME,
        "whenUnsatisfiable": "DoNotSchedule",
        "nodeTaintsPolicy": "Honor",  # a lost node (tainted) is no place to spread to
        "labelSelector": {"matchLabels": {JOB_LABEL: name}},
    }
    for spec in specs.values():
        pod = spec["template"]["spec"]
        if node is not None:
            pod["nodeSelector"] = {HOSTNAME: node}
        else:
            pod["topologySpreadConstraints"] = [spread]
        if avoid is not None:
            away = {"key": HOSTNAME, "operator": "NotIn", "values": [avoid]}
            pod["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [away]}]
                    }
                }
            }
        if toleration_s is not None:
            pod["tolerations"] = [
                {"key": f"node.kubernetes.io/{taint}", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": toleration_s}
                for taint in ("not-ready", "unreachable")
            ]  # fmt: skip
        if grace_s is not None:
            pod["terminationGracePeriodSeconds"] = grace_s
        pod["volumes"] = [
            {"name": "programs", "configMap": {"name": "seeded-digits"}},
            {"name": "model", "persistentVolumeClaim": {"claimName": "model"}},
        ]
        container = pod["containers"][0]
        container["image"] = trainer_image
        container["command"] = ["python", f"/programs/{PROGRAM.name}"]
        container["volumeMounts"] = [
            {"name": "programs", "mountPath": "/programs"},
            {"name": "model", "mountPath": "/model"},
        ]
        env = {e["name"]: e["value"] for e in container["env"]}
        env.update(
            TF_LOGDIR=f"/model/{name}",
            TF_MAX_STEPS=str(MAX_STEPS),
            TAAS_SAVE_CHECKPOINTS_STEPS=str(CHECKPOINT_STEPS),
            TAAS_LOG_EVERY_STEPS="10",
        )
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return job


def chief_pod(job: dict[str, Any]) -> str:
    """The pod of the job's coordinator: its chief, or worker 0 when it has none."""
    specs = job["spec"]["tfReplicaSpecs"]
    return f"{job['metadata']['name']}-{'chief' if 'Chief' in specs else 'worker'}-0"


def checkpoint_step(model_dir: Path) -> int:
    """The step of the last checkpoint written to `model_dir` (0: none yet)."""
    index = model_dir / "checkpoint"
    text = index.read_text() if index.exists() else ""
    match = re.search(r'model_checkpoint_path: ".*-(\d+)"', text)
    return int(match.group(1)) if match else 0


def first_step(log: str, since: datetime) -> datetime | None:
    """When the first progress line of a `--timestamps` log at or after `since` was logged."""
    for line in log.splitlines():
        if PROGRESS.search(line):
            stamp = datetime.fromisoformat(line.split(" ", 1)[0].replace("Z", "+00:00"))
            if stamp >= since:
                return stamp
    return None


def resumed(log: str) -> tuple[int, datetime] | None:
    """In a chief's `--timestamps` log: (the checkpoint's step it resumed from, when its first
    step after that was logged), once it has logged one."""
    match = RESUMED.search(log)
    if not match:
        return None
    stamp = first_step(log[match.end() :], datetime.min.replace(tzinfo=UTC))
    return None if stamp is None else (int(match.group(1)), stamp)


class Outcome(BaseModel):
    """What the chief's log says of the trained model."""

    last_batch_loss: float
    test_loss: float
    test_accuracy: float


def outcome(log: str) -> Outcome | None:
    """The chief's last batch loss and its test loss and accuracy (seeded_digits prints both
    after training); None when the log lacks one."""
    losses = [float(m.group(2)) for m in PROGRESS.finditer(log)]
    loss = re.search(r"test loss: ([0-9.]+)", log)
    accuracy = re.search(r"test accuracy: ([0-9.]+)", log)
    if not (losses and loss and accuracy):
        return None
    return Outcome(
        last_batch_loss=losses[-1],
        test_loss=float(loss.group(1)),
        test_accuracy=float(accuracy.group(1)),
    )


class Broke(Exception):
    """A run that did not end as it should (the message says where)."""


def _get(cluster: Cluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def poll(what: str, probe: Callable[[], T | None], timeout: float, every: float = 0.5) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(every)
    raise Broke(f"timed out after {timeout:.0f}s waiting for {what}")


def _pods(cluster: Cluster, ns: str, job: str) -> list[dict[str, Any]]:
    return list(_get(cluster, "pods", "-n", ns, "-l", f"{JOB_LABEL}={job}")["items"])


def finished(cluster: Cluster, ns: str, job: str) -> bool:
    conditions = _get(cluster, "tfjob", "-n", ns, job).get("status", {}).get("conditions") or []
    state = {c["type"]: c["status"] for c in conditions}
    if state.get("Failed") == "True":
        raise Broke(f"{job} Failed")
    return state.get("Succeeded") == "True"


def timed_log(cluster: Cluster, ns: str, pod: str) -> str:
    """The pod's log, each line with its time (`kubectl logs --timestamps`)."""
    return cluster.kubectl("logs", "-n", ns, pod, "--timestamps", check=False).stdout


def node_ready(cluster: Cluster, name: str) -> bool:
    """Whether the node's Ready condition is True."""
    conditions = _get(cluster, "node", name)["status"]["conditions"]
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def pod_uid(cluster: Cluster, ns: str, pod: str) -> str:
    """The uid of the pod (made again: another uid)."""
    return str(_get(cluster, "pod", "-n", ns, pod)["metadata"]["uid"])


def node_once_running(cluster: Cluster, ns: str, job: str, pod: str, count: int) -> str | None:
    """The node of `pod` once the job has its `count` pods, every one Running; else None."""
    pods = {p["metadata"]["name"]: p for p in _pods(cluster, ns, job)}
    running = [p for p in pods.values() if p["status"].get("phase") == "Running"]
    return str(pods[pod]["spec"]["nodeName"]) if len(running) == len(pods) == count else None


def running_elsewhere(cluster: Cluster, ns: str, job: str, count: int, gone: str) -> bool:
    """Whether the job's `count` live pods all run, none on the node `gone`."""
    live = [p for p in _pods(cluster, ns, job) if not p["metadata"].get("deletionTimestamp")]
    return len(live) == count and all(
        p["status"].get("phase") == "Running" and p["spec"].get("nodeName") != gone for p in live
    )


def moved_or_done(cluster: Cluster, ns: str, job: str, count: int, gone: str) -> str | None:
    """ "moved": every replica of the job Running on a node but `gone`; "done": the job
    Succeeded (raises Broke when it Failed); else None."""
    if finished(cluster, ns, job):
        return "done"
    return "moved" if running_elsewhere(cluster, ns, job, count, gone) else None


# -- the bench --------------------------------------------------------------------------------
