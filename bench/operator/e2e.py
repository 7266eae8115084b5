"""End-to-end workload: one TFJob on a real cluster, TaaS against training-operator.

    python -m bench.operator e2e [--rounds 2] [--job examples/mnist/async.yaml] [--json FILE]
                                 [--nodes 3]     # real nodes (default 1)

Needs root (taas_controlplane.cluster: kubelet, containerd, CoreDNS, kube-proxy, kube-router).
The same TFJob (default: examples/mnist/async.yaml, 1 PS + 2 workers of real TensorFlow in the
trainer image, already imported into the node) is applied under each controller in turn, on the
same node, in a fresh namespace each time; every round runs both controllers, alternating who
goes first, so the machine's noise spreads evenly. Both controllers run out of cluster with an
admin kubeconfig, started as bench/operator/controllers.py starts them (each with its own TFJob
CRD, applied before its runs). Figures per run, from `kubectl apply`:

- all pods Running: every replica pod of the job is in phase Running (the kubelet started them);
- Succeeded: the job's Succeeded condition is True.

Each run also records on how many nodes its pods ran (with `--nodes 3`, the default scheduler
spreads the job's pods over the nodes; the report says how many runs spanned more than one).

The report gives the median of each figure per controller and the ratio TaaS / training-operator
(below 1.00: TaaS is faster).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import yaml
from pydantic import BaseModel

from bench.operator.controllers import (
    CONTROLLERS,
    ControllerError,
    RunningController,
    wait_alive,
)
from bench.table import figure, ratio
from taas_controlplane.build.images import ensure_image
from taas_controlplane.cluster.cluster import Cluster, ClusterError

REPO = Path(__file__).resolve().parents[2]
CONTESTANTS = ("taas", "kubeflow")
SELECTOR = "training.kubeflow.org/job-name"


class Run(Protocol):
    """What the contest table reads of a run (E2ERun, bench.katib's TrialRun)."""

    @property
    def controller(self) -> str: ...

    @property
    def error(self) -> str | None: ...


class E2ERun(BaseModel):
    """One TFJob under one controller."""

    controller: str
    round: int
    all_running_s: float | None = None
    succeeded_s: float | None = None
    nodes_used: int = 0
    error: str | None = None


def _job(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text()))


def _status(cluster: Cluster, ns: str, name: str) -> tuple[int, int, bool, bool, int]:
    """(pods, pods Running, Succeeded, Failed, nodes the pods are on) of the job now."""
    pods = json.loads(
        cluster.kubectl("get", "pods", "-n", ns, "-l", f"{SELECTOR}={name}", "-o", "json").stdout
    )["items"]
    running = sum(1 for p in pods if p["status"].get("phase") == "Running")
    nodes = {p["spec"].get("nodeName") for p in pods} - {None}
    job = json.loads(cluster.kubectl("get", "tfjob", "-n", ns, name, "-o", "json").stdout)
    conditions = {c["type"]: c["status"] for c in (job.get("status") or {}).get("conditions") or []}
    return (
        len(pods),
        running,
        conditions.get("Succeeded") == "True",
        (conditions.get("Failed") == "True"),
        len(nodes),
    )


def run_job(
    cluster: Cluster, controller: str, round_: int, tfjob: dict[str, Any], timeout: float
) -> E2ERun:
    """Apply the job in a fresh namespace and time it until Succeeded (or Failed/timeout)."""
    replicas = sum(int(s.get("replicas", 1)) for s in tfjob["spec"]["tfReplicaSpecs"].values())
    name = tfjob["metadata"]["name"]
    ns = f"bench-{controller}-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", ns)
    result = E2ERun(controller=controller, round=round_)
    started = time.monotonic()
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(tfjob))
    try:
        while time.monotonic() - started < timeout:
            pods, running, succeeded, failed, nodes = _status(cluster, ns, name)
            now = time.monotonic() - started
            if result.all_running_s is None and pods == replicas and running == replicas:
                result.all_running_s = now
                result.nodes_used = nodes
            if succeeded:
                result.succeeded_s = now
                return result
            if failed:
                result.error = "the job Failed"
                return result
            time.sleep(0.2)
        result.error = f"not Succeeded after {timeout:.0f}s"
        return result
    finally:
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def turns(round_: int, contestants: tuple[str, ...] = CONTESTANTS) -> tuple[str, ...]:
    """The contestants in the order they run in round `round_` (alternating each round)."""
    return contestants if round_ % 2 == 0 else contestants[::-1]


def start_controller(cluster: Cluster, name: str, workdir: Path) -> RunningController:
    """Install `name`'s TFJob CRD (applied over the last one: the CRD is never deleted) and
    start it out of cluster, its log in `workdir/name`; raises if it dies at start-up."""
    controller = CONTROLLERS[name]
    controller.install(cluster.plane)
    running = controller.start(cluster.kubeconfig, workdir / name)
    try:
        wait_alive(running, 5)  # and let it list and watch before the first job appears
    except ControllerError:
        running.stop()
        raise
    return running


class Measured(Run, Protocol):
    def model_dump_json(self) -> str: ...

    def model_dump(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=Measured)


def contest(
    cluster: Cluster,
    workdir: Path,
    rounds: int,
    label: str,
    run_turn: Callable[[str, int], Sequence[R]],
    report: Callable[[list[R]], str],
    json_path: str | None,
    contestants: tuple[str, ...] = CONTESTANTS,
) -> int:
    """Start `cluster` with the trainer image; for each round, each of `contestants` in turn
    (alternating who goes first): start it, `run_turn(name, round)` (its runs), stop it.
    Print `report(runs)`, write the runs as JSON to `json_path` when given. Exit code: 1 when
    a run failed or the cluster or a controller broke, else 0."""
    runs: list[R] = []
    try:
        cluster.start()
        cluster.load_image(ensure_image("trainer").archive)
        for round_ in range(rounds):
            for name in turns(round_, contestants):
                print(f"[{label}] round {round_ + 1}: {name} ...", file=sys.stderr, flush=True)
                running = start_controller(cluster, name, workdir)
                try:
                    got = run_turn(name, round_)
                finally:
                    running.stop()
                for run in got:
                    print(f"[{label}]   {run.model_dump_json()}", file=sys.stderr, flush=True)
                runs += got
    except (ClusterError, ControllerError, subprocess.CalledProcessError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
    print(report(runs))
    if json_path:
        Path(json_path).write_text(json.dumps([r.model_dump() for r in runs], indent=2))
    return 1 if any(r.error for r in runs) else 0


def median(runs: Sequence[Run], field: str) -> float | None:
    """The median of `field` over the runs without error that measured it."""
    values = [getattr(r, field) for r in runs if getattr(r, field) is not None and not r.error]
    return statistics.median(values) if values else None


def contest_table(runs: Sequence[Run], figures: Sequence[tuple[str, str]], heading: str) -> str:
    """One line per (field, title) of `figures`: its median under TaaS and under
    training-operator and their ratio (below 1.00x: TaaS is faster)."""
    lines = [f"{heading:<44}{'TaaS':>8}{'t-op':>8}{'TaaS/t-op':>11}"]
    for field, title in figures:
        taas = median([r for r in runs if r.controller == "taas"], field)
        kubeflow = median([r for r in runs if r.controller == "kubeflow"], field)
        lines.append(
            f"{title:<44}{figure(taas):>8}{figure(kubeflow):>8}{ratio(taas, kubeflow):>11}"
        )
    return "\n".join(lines)


def report(runs: list[E2ERun]) -> str:
    """Medians per controller and the ratio TaaS / training-operator."""
    figures = [("all_running_s", "all pods Running"), ("succeeded_s", "Succeeded")]
    table = contest_table(runs, figures, "figure (median s from kubectl apply)")
    spread = sum(1 for r in runs if r.nodes_used > 1)
    return (
        f"{table}\nruns: {len(runs)}, failed: {sum(1 for r in runs if r.error)}, "
        f"pods on more than one node: {spread} of {len(runs)}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.operator e2e", description=__doc__)
    parser.add_argument("--rounds", type=int, default=2, help="runs per controller")
    parser.add_argument("--job", type=Path, default=REPO / "examples" / "mnist" / "async.yaml")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--json", metavar="FILE", help="also write every run as JSON")
    parser.add_argument("--nodes", type=int, default=1, help="real nodes (default 1)")
    args = parser.parse_args(argv)
    if args.nodes < 1:
        parser.error("--nodes must be at least 1")
    tfjob = _job(args.job)
    workdir = Path(tempfile.mkdtemp(prefix="taas-bench-e2e-"))
    cluster = Cluster(workdir / "node", nodes=args.nodes)
    return contest(
        cluster,
        workdir,
        args.rounds,
        "bench e2e",
        lambda name, round_: [run_job(cluster, name, round_, tfjob, args.timeout)],
        report,
        args.json,
    )


if __name__ == "__main__":
    sys.exit(main())
