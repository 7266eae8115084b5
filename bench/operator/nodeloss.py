"""A node lost mid-training on three real nodes, and the same job left alone.

    python -m bench.operator node-loss [--timings fast|default] [--shapes mwms-worker,pss-ps]
                                       [--json FILE]

Needs root (taas_controlplane.cluster). A 3-node cluster is started with the node timings
asked for: `default`, Kubernetes' own (a node NotReady after kube-controller-manager's grace
period without a lease renewal, its pods evicted after the DefaultTolerationSeconds every pod
gets, 300 s, each then given its 30 s of grace); `fast`, the node tests' (`NodeTimings.fast()`,
and the jobs tolerate the not-ready/unreachable taints 2 s and have 15 s of grace, as in
tests/e2e/test_node_loss.py). TaaS runs out of cluster (bench/harness/controllers.py), so no
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
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bench.harness.contest import contest
from bench.harness.seeded_training import (
    PROGRAM,
    Broke,
    Outcome,
    checkpoint_step,
    chief_pod,
    finished,
    first_step,
    moved_or_done,
    node_once_running,
    node_ready,
    outcome,
    pod_uid,
    poll,
    resumed,
    seeded_job,
    shared_volume,
    timed_log,
)
from bench.harness.table import figure, ratio
from taas_controlplane.build.images import ensure_image
from taas_controlplane.cluster.cluster import Cluster
from taas_controlplane.node.component_commands import NodeTimings


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
    poll(f"{name} Succeeded", lambda: finished(cluster, ns, name), 900, every=1)
    run.reference_s = time.monotonic() - started
    run.reference = outcome(timed_log(cluster, ns, chief_pod(job)))


def _interrupted(
    cluster: Cluster, ns: str, job: dict[str, Any], shape: Shape, model_dir: Path, run: LossRun
) -> None:
    name, chief = job["metadata"]["name"], chief_pod(job)
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(job))

    victim = poll(
        f"{name}'s replicas Running",
        lambda: node_once_running(cluster, ns, name, f"{name}-{shape.victim}", shape.replicas),
        300,
    )
    poll("a first checkpoint", lambda: checkpoint_step(model_dir), 600, every=0.2)
    chief_uid = pod_uid(cluster, ns, chief)
    off, clock = datetime.now(UTC), time.monotonic()
    cluster.node(victim).power_off()
    run.checkpoint_at_power_off = checkpoint_step(model_dir)
    try:
        poll(f"{victim} NotReady", lambda: not node_ready(cluster, victim), 600)
        run.not_ready_s = time.monotonic() - clock
        moved = poll(
            "the replicas Running on the other nodes, or the job Succeeded",
            lambda: moved_or_done(cluster, ns, name, shape.replicas, victim),
            900,
        )
        if moved == "moved":
            run.running_elsewhere_s = time.monotonic() - clock
            running = datetime.now(UTC)
            if pod_uid(cluster, ns, chief) != chief_uid:
                step, stamp = poll(
                    "the chief's resume", lambda: resumed(timed_log(cluster, ns, chief)), 300
                )
                run.resumed_from = step
            else:  # a PSS chief is not restarted when a worker is lost
                stamp = poll(
                    "the chief's next step",
                    lambda: first_step(timed_log(cluster, ns, chief), running),
                    300,
                )
            run.first_step_s = (stamp - off).total_seconds()
        else:  # a PSS chief that went on without its worker finished before the eviction
            run.finished_first = True
        poll(f"{name} Succeeded", lambda: finished(cluster, ns, name), 900, every=1)
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
