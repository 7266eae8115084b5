"""`python -m bench.operator`: run the operator benchmark and print the table.

    python -m bench.operator                 # full: (a) 1x64, (b) 200x4, (c) 1,000 idle,
                                             #       (d) restart among 5,000,
                                             #       (e) 10 jobs training 60 s (progress)
    python -m bench.operator --quick         # CI-sized: 1x16, 20x4, 100 idle, restart among 500,
                                             #       (e) 4 jobs
    python -m bench.operator --workloads b --controllers taas,floor --json out.json
    python -m bench.operator --workloads c --controllers taas --profile prof/   # py-spy
    python -m bench.operator e2e [--rounds N]   # one TFJob on a real node (bench/operator/e2e.py)
    python -m bench.operator node-loss [--timings fast|default]   # a node powered off under
                                             #       real training, 3 nodes (nodeloss.py)
    python -m bench.operator fairness [--jobs 3000] [--controllers taas,kubeflow]
                                             # one namespace floods, another's first pods
                                             #       (fairness.py)

Each (workload, controller) pair gets its own fresh etcd + kube-apiserver; controllers run in
turn for each workload so noise spreads evenly. Exit 0 when every run finished (slow or not),
1 when a run broke (a controller or the control plane died, or could not start), 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.harness.cli import choices
from bench.harness.controllers import CONTROLLERS
from bench.harness.profiler import py_spy, summarize
from bench.harness.workloads import WORKLOADS_FULL, WORKLOADS_QUICK
from bench.operator.measure import RunResult, run_one
from bench.operator.report import breakdown, table
from bench.operator.restart import run_restart
from bench.operator.training import TrainingResult, run_training, training_table


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["e2e"]:
        from bench.operator.e2e import main as e2e_main

        return e2e_main(argv[1:])
    if argv[:1] == ["fairness"]:
        from bench.operator.fairness import main as fairness_main

        return fairness_main(argv[1:])
    if argv[:1] == ["node-loss"]:
        from bench.operator.nodeloss import main as node_loss_main

        return node_loss_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m bench.operator",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="CI-sized workloads")
    parser.add_argument("--workloads", default="a,b,c,d,e", help="subset of a-e (default all)")
    parser.add_argument(
        "--controllers",
        default=",".join(CONTROLLERS),
        help=f"subset of {','.join(CONTROLLERS)} (default all)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    parser.add_argument("--workdir", metavar="DIR", help="logs and control planes (default tmp)")
    parser.add_argument(
        "--keep-files", action="store_true", help="keep etcd data and audit logs in the workdir"
    )
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="py-spy the Python controllers (TaaS, floor) during each measured run: collapsed "
        "stacks in DIR/<workload>-<controller>.collapsed, a summary printed after the table",
    )
    args = parser.parse_args(argv)
    catalogue = WORKLOADS_QUICK if args.quick else WORKLOADS_FULL
    try:
        workload_keys = choices(args.workloads, {**catalogue, "e": None}, "--workloads")
        controller_names = choices(args.controllers, dict(CONTROLLERS), "--controllers")
    except argparse.ArgumentTypeError as err:
        parser.error(str(err))
    if args.profile and py_spy() is None:
        parser.error("--profile needs py-spy: pip install py-spy")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="taas-bench-operator-"))
    print(f"[bench] work dir {workdir}", file=sys.stderr, flush=True)

    results: list[RunResult] = []
    profiles: list[Path] = []
    for key in [k for k in workload_keys if k != "e"]:
        workload = catalogue[key]
        for name in controller_names:
            if workload.restart and not CONTROLLERS[name].restartable:
                continue
            started = time.monotonic()
            print(f"[bench] ({key}) {workload.title}: {name} ...", file=sys.stderr, flush=True)
            profile = None
            if args.profile and CONTROLLERS[name].python:
                profile = Path(args.profile) / f"{key}-{name}.collapsed"
                profiles.append(profile)
            runner = run_restart if workload.restart else run_one
            result = runner(
                CONTROLLERS[name], workload, workdir / f"{key}-{name}", args.keep_files, profile
            )
            state = "BROKEN" if result.broken else f"{result.complete_jobs}/{result.jobs} jobs"
            print(
                f"[bench]   {state} in {time.monotonic() - started:.0f}s",
                file=sys.stderr,
                flush=True,
            )
            if result.broken:
                print(result.broken, file=sys.stderr, flush=True)
            results.append(result)

    training = (
        _training(controller_names, args.quick, workdir, args.keep_files)
        if "e" in workload_keys
        else []
    )
    workloads = [catalogue[k] for k in workload_keys if k != "e"]
    if workloads:
        print(table(results, workloads))
        print()
        print(breakdown(results))
    if training:
        print()
        print(training_table(training))
    for profile in profiles:
        print()
        print(summarize(profile) if profile.exists() else f"{profile}: not written")
    if args.json:
        dumped = [r.model_dump() for r in [*results, *training]]
        Path(args.json).write_text(json.dumps(dumped, indent=2))
    return 1 if any(r.broken for r in [*results, *training]) else 0


def _training(
    controllers: list[str], quick: bool, workdir: Path, keep_files: bool
) -> list[TrainingResult]:
    """Workload (e) (bench.operator.training): TaaS with progress on and off, training-operator."""
    names = [n for n in ("taas", "taas-noprogress", "kubeflow") if n.split("-")[0] in controllers]
    jobs = 4 if quick else 10
    results = []
    for name in names:
        print(f"[bench] (e) {jobs} jobs training 60 s: {name} ...", file=sys.stderr, flush=True)
        run = run_training(name, jobs, 60.0, workdir / f"e-{name}", keep_files)
        state = "BROKEN" if run.broken else f"{run.succeeded_jobs}/{run.jobs} jobs"
        print(f"[bench]   {state} in {run.wall_s or 0:.0f}s", file=sys.stderr, flush=True)
        results.append(run)
    return results


if __name__ == "__main__":
    sys.exit(main())
