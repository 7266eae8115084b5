"""`python -m bench.scale`: TaaS, training-operator v1.8.1 and the floor side by side on a
simulated cluster (kwok nodes behind the real control plane, `taas_controlplane.sim`).

    python -m bench.scale                    # full: 1,000 nodes; (d) 1 TFJob of 100 PS + 1,000
                                             #   workers, (e) 100 TFJobs x 100 replicas,
                                             #   (f) 10 of 1,000 nodes silent under a job
    python -m bench.scale --quick            # 100 nodes; (d) 10 PS + 100 workers,
                                             #   (e) 10 x 50, (f) 3 of 100 nodes silent
    python -m bench.scale --scenarios e --controllers taas,floor --json out.json
    python -m bench.scale --quick --scenarios d --controllers taas --profile prof/   # py-spy

Each (scenario, controller) run gets its own fresh simulated cluster (bench/scale/stage.py
says why); the contestants take turns within each scenario. Exit 0 when every run finished
(slow or not), 1 when a run broke (a controller or a cluster part died), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

from bench.harness.cli import choices
from bench.harness.controllers import CONTROLLERS
from bench.harness.profiler import Profiler, py_spy, summarize
from bench.scale.load import measure_load
from bench.scale.report import breakdown, goals, table
from bench.scale.results import ScaleResult
from bench.scale.scenarios import SCENARIOS_FULL, SCENARIOS_QUICK, Scenario
from bench.scale.silent_nodes import measure_node_loss
from bench.scale.stage import staged

CONTESTANTS = ("taas", "kubeflow", "floor")


def run(
    name: str, scenario: Scenario, workdir: Path, keep_files: bool, profile: Path | None = None
) -> ScaleResult:
    """One contestant on one scenario, on its own simulated cluster; with `profile`, py-spy
    records the controller while it is measured (collapsed stacks in that file)."""
    result = ScaleResult(controller=name, scenario=scenario.key, pods=scenario.pods)
    started = time.monotonic()
    try:
        with staged(CONTROLLERS[name], scenario, workdir, keep_files) as stage:
            result.nodes_ready_s = stage.sim.nodes_ready_seconds
            profiler = Profiler(stage.running.pid, profile).start() if profile else None
            try:
                if scenario.node_loss:
                    measure_node_loss(stage, scenario, result)
                else:
                    measure_load(stage, scenario, result)
            finally:
                if profiler is not None:
                    profiler.stop()
    except Exception as err:
        result.broken = f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=4)}"
    result.wall_s = time.monotonic() - started
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="100 nodes, small jobs")
    parser.add_argument("--scenarios", default="d,e,f", help="subset of d,e,f (default all)")
    parser.add_argument(
        "--controllers", default=",".join(CONTESTANTS), help="subset of taas,kubeflow,floor"
    )
    parser.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    parser.add_argument("--workdir", metavar="DIR", help="logs and clusters (default tmp)")
    parser.add_argument(
        "--keep-files", action="store_true", help="keep etcd data and audit logs in the workdir"
    )
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="py-spy TaaS and the floor while measured: DIR/<scenario>-<controller>.collapsed, "
        "a summary printed after the table (pip install py-spy)",
    )
    args = parser.parse_args(argv)
    catalogue = SCENARIOS_QUICK if args.quick else SCENARIOS_FULL
    try:
        keys = choices(args.scenarios, tuple(catalogue), "--scenarios")
        names = choices(args.controllers, CONTESTANTS, "--controllers")
    except argparse.ArgumentTypeError as err:
        parser.error(str(err))
    if args.profile and py_spy() is None:
        parser.error("--profile needs py-spy: pip install py-spy")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="taas-bench-scale-"))
    print(f"[bench] work dir {workdir}", flush=True)
    began = time.monotonic()
    results: list[ScaleResult] = []
    profiles: list[Path] = []
    for key in keys:
        scenario = catalogue[key]
        for name in names:
            if scenario.node_loss and name == "floor":
                continue  # no controller logic: nothing to replace
            print(f"[bench] ({key}) {scenario.title}: {name} ...", flush=True)
            profile = None
            if args.profile and CONTROLLERS[name].python:
                profile = Path(args.profile) / f"{key}-{name}.collapsed"
                profiles.append(profile)
            result = run(name, scenario, workdir / f"{key}-{name}", args.keep_files, profile)
            state = "BROKEN" if result.broken else "done"
            print(f"[bench]   {state} in {result.wall_s:.0f}s", flush=True)
            if result.broken:
                print(result.broken, flush=True)
            results.append(result)
            if args.json:  # after every run: a long run's figures survive an interruption
                dumped = [r.model_dump() for r in results]
                Path(args.json).write_text(json.dumps(dumped, indent=2))
    print()
    print(table(results, [catalogue[k] for k in keys]))
    print()
    print(goals(results))
    print()
    print(breakdown([r for r in results if r.controller_requests or r.broken]))
    for profile in profiles:
        print()
        print(summarize(profile) if profile.exists() else f"{profile}: not written")
    print(f"\n[bench] {len(results)} runs in {(time.monotonic() - began) / 60:.1f} min")
    return 1 if any(r.broken for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
