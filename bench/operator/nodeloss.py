"""A node lost mid-training on three real nodes, and the same job left alone.

    python -m bench.operator node-loss [--timings fast|default] [--shapes mwms-worker,pss-ps]
                                       [--json FILE]

Needs root (taas_controlplane.cluster). A 3-node cluster is started with the node timings
asked for: `default`, Kubernetes' own (a node NotReady after kube-controller-manager's grace
period without a lease renewal, its pods evicted after the DefaultTolerationSeconds every pod
gets, 300 s, each then given its 30 s of grace); `fast`, the node tests' (`NodeTimings.fast()`,
and the jobs tolerate the not-ready/unreachable taints 2 s and have 15 s of grace, as in
tests/e2e/test_node_loss.py). TaaS runs out of cluster (bench/operator/controllers.py), so no
node's loss takes it along.

For each shape (SHAPES: which example, which replica's node is lost), in a fresh namespace:
the seeded program (tests/e2e/programs/seeded_digits.py) of the example with its model dir on a
ReadWriteMany volume (one host directory every node sees, standing in for NFS), first left
alone until it Succeeds (the reference), then again with the node of one replica powered off
(`Node.power_off`) once a checkpoint is written. Figures, from the power-off: the node NotReady,
every replica Running on the other nodes, the chief's first training step after that (a
ParameterServerStrategy chief is not restarted when a worker is lost, and the job may Succeed
before every replica is seen Running elsewhere: the report says so); the checkpoint's step at
the power-off and the step the chief resumed from; and the interrupted run's test loss and
accuracy against the reference's (ratios). The node is powered on again
before the next shape. Exit 1 when a run broke (no Succeeded, the cluster or TaaS died).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel

from bench.operator.e2e import contest
from bench.table import figure, ratio
from taas_controlplane.build.images import ensure_image
from taas_controlplane.cluster.cluster import Cluster
from taas_controlplane.node.component_commands import NodeTimings

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


class Shape(BaseModel):
    """A job (an example of examples/keras_digits) and the replica whose node is lost."""

    example: str
    victim: str
    replicas: int


SHAPES = {
    "mwms-worker": Shape(example="mwms.yaml", victim="worker-1", replicas=3),
    "pss-worker": Shape(example="pss.yaml", victim="worker-0", replicas=4),
    "pss-ps": Shape(example="pss.yaml", victim="ps-0", replicas=4),
}


# -- the scenario (tests/e2e/test_node_loss.py runs it too) ----------------------------------


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


def _poll(what: str, probe: Callable[[], T | None], timeout: float, every: float = 0.5) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(every)
    raise Broke(f"timed out after {timeout:.0f}s waiting for {what}")


def _pods(cluster: Cluster, ns: str, job: str) -> list[dict[str, Any]]:
    return list(_get(cluster, "pods", "-n", ns, "-l", f"{JOB_LABEL}={job}")["items"])


def _finished(cluster: Cluster, ns: str, job: str) -> bool:
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
    if _finished(cluster, ns, job):
        return "done"
    return "moved" if running_elsewhere(cluster, ns, job, count, gone) else None


# -- the bench --------------------------------------------------------------------------------


class LossRun(BaseModel):
    """One shape: the reference and the interrupted run (seconds from the power-off)."""

    shape: str
    timings: str
    controller: str = "taas"
    reference_s: float | None = None
    reference: Outcome | None = None
    not_ready_s: float | None = None
    running_elsewhere_s: float | None = None
    first_step_s: float | None = None
    checkpoint_at_power_off: int | None = None
    resumed_from: int | None = None  # None: the chief never stopped
    #: The job Succeeded before its replicas were made again elsewhere (a PSS chief going on
    #: without the lost worker, with Kubernetes' 300 s before the eviction).
    finished_first: bool = False
    succeeded_s: float | None = None
    interrupted: Outcome | None = None
    error: str | None = None


def _reference(cluster: Cluster, ns: str, job: dict[str, Any], run: LossRun) -> None:
    name = job["metadata"]["name"]
    started = time.monotonic()
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(job))
    _poll(f"{name} Succeeded", lambda: _finished(cluster, ns, name), 900, every=1)
    run.reference_s = time.monotonic() - started
    run.reference = outcome(timed_log(cluster, ns, chief_pod(job)))


def _interrupted(
    cluster: Cluster, ns: str, job: dict[str, Any], shape: Shape, model_dir: Path, run: LossRun
) -> None:
    name, chief = job["metadata"]["name"], chief_pod(job)
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(job))

    victim = _poll(
        f"{name}'s replicas Running",
        lambda: node_once_running(cluster, ns, name, f"{name}-{shape.victim}", shape.replicas),
        300,
    )
    _poll("a first checkpoint", lambda: checkpoint_step(model_dir), 600, every=0.2)
    chief_uid = pod_uid(cluster, ns, chief)
    off, clock = datetime.now(UTC), time.monotonic()
    cluster.node(victim).power_off()
    run.checkpoint_at_power_off = checkpoint_step(model_dir)
    try:
        _poll(f"{victim} NotReady", lambda: not node_ready(cluster, victim), 600)
        run.not_ready_s = time.monotonic() - clock
        moved = _poll(
            "the replicas Running on the other nodes, or the job Succeeded",
            lambda: moved_or_done(cluster, ns, name, shape.replicas, victim),
            900,
        )
        if moved == "moved":
            run.running_elsewhere_s = time.monotonic() - clock
            running = datetime.now(UTC)
            if pod_uid(cluster, ns, chief) != chief_uid:
                step, stamp = _poll(
                    "the chief's resume", lambda: resumed(timed_log(cluster, ns, chief)), 300
                )
                run.resumed_from = step
            else:  # a PSS chief is not restarted when a worker is lost
                stamp = _poll(
                    "the chief's next step",
                    lambda: first_step(timed_log(cluster, ns, chief), running),
                    300,
                )
            run.first_step_s = (stamp - off).total_seconds()
        else:  # a PSS chief that went on without its worker finished before the eviction
            run.finished_first = True
        _poll(f"{name} Succeeded", lambda: _finished(cluster, ns, name), 900, every=1)
        run.succeeded_s = time.monotonic() - clock
        run.interrupted = outcome(timed_log(cluster, ns, chief))
    finally:
        cluster.power_on(victim)


def run_shape(cluster: Cluster, key: str, timings: str, trainer_image: str) -> LossRun:
    """The reference and the interrupted run of one shape, in a namespace of their own."""
    shape, run = SHAPES[key], LossRun(shape=key, timings=timings)
    ns = f"bench-loss-{key}"
    directory = cluster.directory / "nfs" / ns
    for model in ("reference", "lost"):
        (directory / model).mkdir(parents=True, exist_ok=True)
        (directory / model).chmod(0o777)  # the trainer runs as uid 1000
    directory.chmod(0o777)
    fast = timings == "fast"
    try:
        cluster.kubectl("create", "namespace", ns)
        for item in shared_volume(directory, ns):
            cluster.kubectl("apply", "-f", "-", input=json.dumps(item))
        cluster.kubectl(
            "create", "configmap", "seeded-digits", "-n", ns,
            f"--from-file={PROGRAM.name}={PROGRAM}",
        )  # fmt: skip
        _reference(cluster, ns, seeded_job(shape.example, "reference", trainer_image), run)
        lost = seeded_job(
            shape.example,
            "lost",
            trainer_image,
            toleration_s=2 if fast else None,
            grace_s=15 if fast else None,
        )
        _interrupted(cluster, ns, lost, shape, directory / "lost", run)
    except (Broke, subprocess.CalledProcessError, KeyError) as err:
        run.error = str(err)
    finally:
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
        cluster.kubectl("delete", "pv", f"nfs-{ns}", "--wait=false", check=False)
    return run


def _pair(mine: Outcome | None, ref: Outcome | None, field: str) -> tuple[float | None, ...]:
    return tuple(None if o is None else float(getattr(o, field)) for o in (mine, ref))


def _loss(run: Outcome | None) -> str:
    return "-" if run is None else f"{run.test_loss:.4f}"


def report(runs: list[LossRun]) -> str:
    """One line per shape: the figures from the power-off, the checkpoint's step at it and the
    step resumed from, the test loss of the interrupted run and the reference, their ratios."""
    lines = [
        f"{'shape':<13}{'timings':<9}{'NotReady':>9}{'Running':>9}{'1st step':>9}"
        f"{'ckpt->resumed':>15}{'test loss':>11}{'ref':>8}{'ratio':>8}{'acc ratio':>11}"
    ]
    for r in runs:
        mine, ref = r.interrupted, r.reference
        resumed_from = "never" if r.resumed_from is None else str(r.resumed_from)
        lines.append(
            f"{r.shape:<13}{r.timings:<9}{figure(r.not_ready_s):>9}"
            f"{figure(r.running_elsewhere_s):>9}{figure(r.first_step_s):>9}"
            f"{f'{r.checkpoint_at_power_off}->{resumed_from}':>15}"
            f"{_loss(mine):>11}{_loss(ref):>8}"
            f"{ratio(*_pair(mine, ref, 'test_loss')):>8}"
            f"{ratio(*_pair(mine, ref, 'test_accuracy')):>11}"
            + ("  Succeeded before every replica was seen elsewhere" if r.finished_first else "")
            + (f"  error: {r.error}" if r.error else "")
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.operator node-loss", description=__doc__)
    parser.add_argument("--timings", choices=("fast", "default"), default="default")
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"of {','.join(SHAPES)}")
    parser.add_argument("--json", metavar="FILE", help="also write every run as JSON")
    args = parser.parse_args(argv)
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown or not shapes:
        parser.error(f"--shapes: unknown {', '.join(unknown) or 'empty list'}")
    workdir = Path(tempfile.mkdtemp(prefix="taas-bench-node-loss-"))
    timings = NodeTimings.fast() if args.timings == "fast" else NodeTimings()
    cluster = Cluster(workdir / "node", nodes=3, node_timings=timings)
    image = ensure_image("trainer").reference  # contest() loads it into the nodes

    def shapes_in_turn(controller: str, _round: int) -> list[LossRun]:
        runs = []
        for key in shapes:
            print(f"[bench node-loss] {key} ({args.timings}) ...", file=sys.stderr, flush=True)
            runs.append(run_shape(cluster, key, args.timings, image))
        return runs

    return contest(
        cluster, workdir, 1, "bench node-loss", shapes_in_turn, report, args.json, ("taas",)
    )


if __name__ == "__main__":
    sys.exit(main())
