"""Two controllers in a contest on one real cluster: rounds in which each runs in turn (who goes
first alternates, so the machine's noise spreads evenly), and the table of their medians.

    contest(cluster, workdir, rounds, label, run_turn, report, json_path) -> exit code
    turns(round_) -> ("taas", "kubeflow") or reversed
    median(runs, field); contest_table(runs, [(field, title)], heading)

Used by the end-to-end and node-loss benchmarks (bench.operator) and the Katib one (bench.katib).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from bench.harness.controllers import (
    CONTROLLERS,
    ControllerError,
    RunningController,
    wait_alive,
)
from bench.harness.table import figure, ratio
from taas_controlplane.build.images import ensure_image
from taas_controlplane.cluster.cluster import Cluster, ClusterError

REPO = Path(__file__).resolve().parents[2]
CONTESTANTS = ("taas", "kubeflow")


class Run(Protocol):
    """What the contest table reads of a run (E2ERun, bench.katib's TrialRun)."""

    @property
    def controller(self) -> str: ...

    @property
    def error(self) -> str | None: ...


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
