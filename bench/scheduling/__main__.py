"""`python -m bench.scheduling`: many gang jobs over GPU quotas on the simulated cluster.

    python -m bench.scheduling            # full: 200 jobs of 8-64 workers, 1,000 nodes,
                                          #       4 queues of 1,500 GPUs (run as root)
    python -m bench.scheduling --quick    # CI-sized: 12 jobs of 8-16 workers, 10 nodes, 2 queues
    python -m bench.scheduling --nodes 200 --jobs 50 --queues 4 --quota 300
    python -m bench.scheduling --controllers taas,kubeflow   # the same jobs under each
                                          # TFJob controller in turn (a fresh cluster each),
                                          # then each median as a ratio to the last one

Prints, per run: the time each gang waited for Kueue's admission (created -> admitted), the
time from admission until every pod of the gang ran, and created -> Succeeded (median, p99,
max over the jobs), the whole run's makespan, each queue's peak GPUs (Kueue's accounting and
the pods' own), and Kueue's published scale figures beside them. The controllers are
`bench.harness.controllers`' (taas: TaaS's operator; kubeflow: training-operator v1.8.1, one
reconcile thread as it ships; kubeflow8: eight). Exit 0 when every check held (no deadlock, no
quota exceeded) in every run, 1 when one failed or a part of the cluster died, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.harness.cli import choices
from bench.harness.controllers import CONTROLLERS, ControllerError
from bench.scheduling.gangs import GangResult
from bench.scheduling.report import comparison, table
from bench.scheduling.scenario import GangRun, gang_arguments
from bench.scheduling.shape import GPUS_PER_NODE, GangShape
from taas_controlplane.sim.cluster import SimClusterError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scheduling",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="CI-sized")
    for flag in ("nodes", "jobs", "queues", "quota", "min-workers", "max-workers"):
        parser.add_argument(f"--{flag}", type=int, default=None)
    parser.add_argument("--run-seconds", type=float, default=None)
    parser.add_argument("--workdir", type=Path, default=None, help="keep logs here")
    parser.add_argument(
        "--controllers",
        default="taas",
        help="comma-separated TFJob controllers, run in turn: taas, kubeflow, kubeflow8 "
        "(default: taas); ratios are to the last one",
    )
    args = parser.parse_args(argv)
    try:
        names = choices(args.controllers, CONTROLLERS, "--controllers")
    except argparse.ArgumentTypeError as err:
        parser.error(str(err))
    for name in names:
        try:
            gang_arguments(CONTROLLERS[name])
        except ValueError as err:
            parser.error(f"--controllers: {err}")
    shape = GangShape.quick() if args.quick else GangShape.full()
    changes = {
        name: value
        for name in ("nodes", "jobs", "queues", "quota", "min_workers", "max_workers")
        if (value := getattr(args, name)) is not None
    }
    if args.run_seconds is not None:
        changes["run_seconds"] = args.run_seconds
    shape = shape.model_copy(update=changes)
    too_much = shape.queues * shape.quota > shape.nodes * GPUS_PER_NODE
    if too_much or shape.min_workers > shape.max_workers:
        parser.error("the queues' quotas must fit the nodes' GPUs (8 each), min <= max workers")
    if args.workdir is not None and (args.workdir / "sim").exists():
        parser.error(f"--workdir {args.workdir} holds an earlier run (sim/): give a new directory")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="taas-bench-scheduling-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, GangResult] = {}
    for name in names:
        controller = CONTROLLERS[name]
        print(f"{shape.jobs} gang jobs over {shape.nodes} simulated nodes under "
              f"{controller.label}; logs in {workdir / name}", flush=True)  # fmt: skip
        try:
            with GangRun(shape, workdir / name, controller) as run:
                result = run.run()
        except (SimClusterError, ControllerError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        print(table(result))
        for problem in result.problems:
            print(f"PROBLEM: {problem}")
        for note in result.notes:
            print(f"note: {note}")
        results[controller.label] = result
    if len(results) > 1:
        print(comparison(results))
    return 1 if any(result.problems for result in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
