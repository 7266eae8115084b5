"""A node lost mid-training on the 3-node cluster: powered off (`Node.power_off`: its kubelet,
containerd, kube-proxy, kube-router and every process of its containers SIGKILLed, its link
down) or drained (`kubectl drain`). Kubernetes marks it NotReady and evicts its pods (the
cluster's shortened node timings, components.NodeTimings.fast, and the pods' 2 s toleration of
the not-ready/unreachable taints make that seconds, not minutes); TaaS makes the replicas again
on the surviving nodes; training resumes from the last checkpoint on a volume every node mounts
and the job Succeeds.

The shared volume is a PersistentVolume (ReadWriteMany) of one host directory, which every node
of this machine sees: it stands in for NFS. The jobs keep off the node of the operator (a node
affinity), so that losing a node never takes the operator with it (its own Deployment would be
moved only after Kubernetes' 300 s default toleration). A powered-off node is powered on again
afterwards (its containerd, kube-proxy, kube-router and kubelet started again, its link up), and
a drained one uncordoned, so the other 3-node tests keep their three nodes.

Timings (power-off -> NotReady -> replicas Running elsewhere -> first step after the resume) are
printed (`-s`) and written down in docs/benchmarks.md."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_controlplane.cluster import Cluster
from tests.e2e.node_helpers import (
    HOSTNAME,
    JOB_LABEL,
    REPO,
    condition,
    get_json,
    job_pods,
    operator_pods,
    wait_finished,
    wait_for,
)

pytestmark = [pytest.mark.node, pytest.mark.nodes3, pytest.mark.tensorflow, pytest.mark.slow]

PROGRAM = Path(__file__).parent / "programs" / "seeded_digits.py"
CHECKPOINT_STEPS = 50
MAX_STEPS = 600
#: The chief's progress line: "[worker:0] step 10 global 60/600 loss 0.31 ..."
PROGRESS = re.compile(r"\] step \d+ global (\d+)/\d+ loss ([0-9.]+)")
RESUMED = re.compile(r"chief; resuming from checkpoint \S+-(\d+)")


@pytest.fixture
def shared(cluster: Cluster, ns: str) -> Iterator[Path]:
    """A ReadWriteMany PersistentVolume of one host directory (standing in for NFS: every node
    of this machine sees it) and its claim `model` in `ns`; yields the directory."""
    directory = cluster.directory / "nfs" / ns
    directory.mkdir(parents=True)
    directory.chmod(0o777)  # the trainer runs as uid 1000
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
            "claimRef": {"namespace": ns, "name": "model"},
        },
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "model", "namespace": ns},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": name,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    for item in (volume, claim):
        cluster.kubectl("apply", "-f", "-", input=json.dumps(item))
    wait_for(
        "the model claim bound",
        lambda: get_json(cluster, "-n", ns, "pvc", "model")["status"].get("phase") == "Bound",
    )
    cluster.kubectl(
        "create", "configmap", "seeded-digits", "-n", ns, f"--from-file={PROGRAM.name}={PROGRAM}"
    )
    yield directory
    cluster.kubectl("delete", "-n", ns, "pvc", "model", "--wait=false", check=False)
    cluster.kubectl("delete", "pv", name, "--wait=false", check=False)


def _job(example: str, name: str, trainer_image: str, avoid: str) -> dict[str, Any]:
    """The repository's example (no evaluator; MWMS with 3 workers) running the seeded program
    with its model dir on the shared claim, frequent checkpoints, a 2 s toleration of its node
    being unreachable or not ready, its replicas spread over the nodes but `avoid`."""
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
    away = {"key": HOSTNAME, "operator": "NotIn", "values": [avoid]}
    for spec in specs.values():
        pod = spec["template"]["spec"]
        pod["topologySpreadConstraints"] = [spread]
        pod["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [away]}]
                }
            }
        }
        pod["tolerations"] = [
            {"key": f"node.kubernetes.io/{taint}", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 2}
            for taint in ("not-ready", "unreachable")
        ]  # fmt: skip
        pod["terminationGracePeriodSeconds"] = 15
        pod["volumes"] = [
            {"name": "programs", "configMap": {"name": "seeded-digits"}},
            {"name": "model", "persistentVolumeClaim": {"claimName": "model"}},
        ]
        container = pod["containers"][0]
        assert container["image"] == trainer_image
        container["command"] = ["python", "/programs/seeded_digits.py"]
        container["volumeMounts"] = [
            {"name": "programs", "mountPath": "/programs"},
            {"name": "model", "mountPath": "/model"},
        ]
        env = {e["name"]: e["value"] for e in container["env"]}
        env.update(
            TF_LOGDIR="/model",
            TF_MAX_STEPS=str(MAX_STEPS),
            TAAS_SAVE_CHECKPOINTS_STEPS=str(CHECKPOINT_STEPS),
            TAAS_LOG_EVERY_STEPS="10",
        )
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return job


def _checkpoint_step(directory: Path) -> int:
    index = directory / "checkpoint"
    text = index.read_text() if index.exists() else ""
    match = re.search(r'model_checkpoint_path: ".*-(\d+)"', text)
    return int(match.group(1)) if match else 0


def _operator_node(cluster: Cluster) -> str:
    (pod,) = operator_pods(cluster)
    return str(pod["spec"]["nodeName"])


def _node_ready(cluster: Cluster, name: str) -> bool:
    node = get_json(cluster, "node", name)
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    return bool(ready) and ready[0]["status"] == "True"


def _running_elsewhere(cluster: Cluster, ns: str, job: str, count: int, gone: str) -> bool:
    pods = job_pods(cluster, ns, job)
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    return len(live) == count and all(
        p["status"].get("phase") == "Running" and p["spec"].get("nodeName") != gone for p in live
    )


def _chief(job: dict[str, Any]) -> str:
    specs = job["spec"]["tfReplicaSpecs"]
    return f"{job['metadata']['name']}-{'chief' if 'Chief' in specs else 'worker'}-0"


def _resumed_log(cluster: Cluster, ns: str, pod: str) -> tuple[int, datetime] | None:
    """The chief's resume: (the checkpoint's step, when its first step after it was logged),
    once it has logged a step after resuming."""
    log = cluster.kubectl("logs", "-n", ns, pod, "--timestamps", check=False).stdout
    resumed = RESUMED.search(log)
    if not resumed:
        return None
    stamp = _first_step(log[resumed.end() :], datetime.min.replace(tzinfo=UTC))
    return None if stamp is None else (int(resumed.group(1)), stamp)


def _first_step(log: str, since: datetime) -> datetime | None:
    """When the first progress line of a `--timestamps` log at or after `since` was logged."""
    for line in log.splitlines():
        if PROGRESS.search(line):
            stamp = datetime.fromisoformat(line.split(" ", 1)[0].replace("Z", "+00:00"))
            if stamp >= since:
                return stamp
    return None


def _uid(cluster: Cluster, ns: str, pod: str) -> str:
    return str(get_json(cluster, "-n", ns, "pod", pod)["metadata"]["uid"])


def _final_loss(cluster: Cluster, ns: str, pod: str) -> float:
    log = cluster.kubectl("logs", "-n", ns, pod).stdout
    losses = [float(m.group(2)) for m in PROGRESS.finditer(log)]
    assert losses, log[-3000:]
    return losses[-1]


def _accuracy(cluster: Cluster, ns: str, pod: str) -> float:
    log = cluster.kubectl("logs", "-n", ns, pod).stdout
    match = re.search(r"test accuracy: ([0-9.]+)", log)
    assert match, log[-3000:]
    return float(match.group(1))


def _victim(cluster: Cluster, ns: str, job: str, pod: str, count: int) -> str:
    """The node of `pod` once every replica of the job runs."""

    def placed() -> str | None:
        pods = {p["metadata"]["name"]: p for p in job_pods(cluster, ns, job)}
        running = [p for p in pods.values() if p["status"].get("phase") == "Running"]
        return pods[pod]["spec"]["nodeName"] if len(running) == count else None

    return str(wait_for(f"{job}'s {count} replicas running", placed, timeout=300))


@pytest.mark.parametrize(
    ("example", "victim_replica", "count"),
    [
        ("mwms.yaml", "worker-1", 3),  # MultiWorkerMirroredStrategy: the node of a worker
        ("pss.yaml", "worker-0", 4),  # ParameterServerStrategy: the node of a worker
        ("pss.yaml", "ps-0", 4),  # and the node of the PS
    ],
    ids=["mwms-worker", "pss-worker", "pss-ps"],
)
def test_a_node_powered_off_mid_training_loses_at_most_one_checkpoint_interval(
    cluster: Cluster,
    operator: str,
    trainer_image: str,
    ns: str,
    shared: Path,
    example: str,
    victim_replica: str,
    count: int,
) -> None:
    name = "lost"
    job = _job(example, name, trainer_image, avoid=_operator_node(cluster))
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(job))
    victim = _victim(cluster, ns, name, f"{name}-{victim_replica}", count)
    wait_for("a first checkpoint", lambda: _checkpoint_step(shared), timeout=600, every=0.2)
    chief = _chief(job)
    chief_uid = _uid(cluster, ns, chief)
    off = datetime.now(UTC)
    cluster.node(victim).power_off()
    before = _checkpoint_step(shared)  # nothing on the survivors saves without its peer
    try:
        wait_for(f"{victim} NotReady", lambda: not _node_ready(cluster, victim), timeout=120)
        not_ready = datetime.now(UTC)
        wait_for(
            f"{name}'s replicas running on the other nodes",
            lambda: _running_elsewhere(cluster, ns, name, count, victim),
            timeout=300,
            every=0.5,
        )
        running = datetime.now(UTC)
        if _uid(cluster, ns, chief) != chief_uid:  # the chief was made again: it resumed
            resumed_step, first_step = wait_for(
                "the chief's first step after resuming",
                lambda: _resumed_log(cluster, ns, chief),
                timeout=300,
            )
            assert resumed_step >= before, (resumed_step, before)  # at most one interval lost
        else:  # ParameterServerStrategy goes on without a worker: the chief never stopped
            assert victim_replica.startswith("worker") and "PS" in job["spec"]["tfReplicaSpecs"]
            resumed_step = -1
            first_step = wait_for(
                "the chief's first step with the replicas running elsewhere",
                lambda: _first_step(
                    cluster.kubectl("logs", "-n", ns, chief, "--timestamps").stdout, running
                ),
                timeout=300,
            )
        done = wait_finished(cluster, ns, name, timeout=900)
        assert (condition(done, "Succeeded") or {}).get("status") == "True", done.get("status")
        loss, accuracy = _final_loss(cluster, ns, chief), _accuracy(cluster, ns, chief)
        print(
            f"\n[{example} {victim_replica}] power-off -> NotReady "
            f"{(not_ready - off).total_seconds():.1f}s -> replicas Running elsewhere "
            f"{(running - off).total_seconds():.1f}s -> first step after the resume "
            f"{(first_step - off).total_seconds():.1f}s; checkpoint at the power-off {before}, "
            f"resumed at {resumed_step} (-1: never stopped); final loss {loss:.4f}, "
            f"accuracy {accuracy:.3f}"
        )
        # What an uninterrupted run of the program is held to (test_across_nodes: test
        # accuracy above 0.9), and a last batch loss far below an untrained model's (2.3); the
        # resume from the checkpoint itself is asserted above (its step).
        assert accuracy > 0.9
        assert loss < 0.3, loss
    finally:
        cluster.power_on(victim)
    assert _node_ready(cluster, victim)


def test_a_drained_node_moves_a_worker_after_a_checkpoint_and_says_why(
    cluster: Cluster, operator: str, trainer_image: str, ns: str, shared: Path
) -> None:
    name = "drained"
    job = _job("mwms.yaml", name, trainer_image, avoid=_operator_node(cluster))
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(job))
    victim = _victim(cluster, ns, name, f"{name}-worker-1", 3)
    wait_for("a first checkpoint", lambda: _checkpoint_step(shared), timeout=600, every=0.2)
    start = time.monotonic()
    try:
        cluster.kubectl(
            "drain", victim, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s"
        )
        drained = time.monotonic() - start
        saved = _checkpoint_step(shared)  # the SIGTERM's checkpoint, the old pods gone
        resumed_step, _ = wait_for(
            "the chief's first step after resuming",
            lambda: _resumed_log(cluster, ns, _chief(job)),
            timeout=300,
        )
        assert resumed_step == saved  # no step lost beyond the eviction's checkpoint
        done = wait_finished(cluster, ns, name, timeout=900)
        assert (condition(done, "Succeeded") or {}).get("status") == "True", done.get("status")
        assert all(p["spec"]["nodeName"] != victim for p in job_pods(cluster, ns, name))
        events = get_json(cluster, "-n", ns, "events", "--field-selector",
                          f"involvedObject.kind=TFJob,involvedObject.name={name}")  # fmt: skip
        messages = [e["message"] for e in events["items"]]
        assert any("evicted" in m and victim in m for m in messages), messages
        # The evicted worker's peers stopped on its SIGTERM too, each with its checkpoint
        # saved (exit 143, what a TaaS trainer's SIGTERM ends with).
        assert any("exited with code 143" in m for m in messages), messages
        print(f"\n[drain] drain took {drained:.1f}s; resumed at the eviction's step {saved}")
    finally:
        cluster.kubectl("uncordon", victim)
