"""`python -m bench.operator`: run the operator benchmark and print the table.

    python -m bench.operator                 # full: (a) 1x64, (b) 200x4, (c) 1,000 idle
    python -m bench.operator --quick         # CI-sized: 1x16, 20x4, 100 idle
    python -m bench.operator --workloads b --controllers taas,floor --json out.json
    python -m bench.operator e2e [--rounds N]   # one TFJob on a real node (bench/operator/e2e.py)

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

from bench.operator.controllers import CONTROLLERS
from bench.operator.report import breakdown, table
from bench.operator.runner import RunResult, run_one
from bench.operator.workloads import WORKLOADS_FULL, WORKLOADS_QUICK


def _csv(value: str, allowed: dict[str, object], flag: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{flag}: unknown {', '.join(unknown) or 'empty list'}; choose from {','.join(allowed)}"
        )
    return names


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["e2e"]:
        from bench.operator.e2e import main as e2e_main

        return e2e_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m bench.operator",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="CI-sized workloads")
    parser.add_argument("--workloads", default="a,b,c", help="subset of a,b,c (default all)")
    parser.add_argument(
        "--controllers", default="taas,kubeflow,floor", help="subset of taas,kubeflow,floor"
    )
    parser.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    parser.add_argument("--workdir", metavar="DIR", help="logs and control planes (default tmp)")
    parser.add_argument(
        "--keep-files", action="store_true", help="keep etcd data and audit logs in the workdir"
    )
    args = parser.parse_args(argv)
    catalogue = WORKLOADS_QUICK if args.quick else WORKLOADS_FULL
    try:
        workload_keys = _csv(args.workloads, dict(catalogue), "--workloads")
        controller_names = _csv(args.controllers, dict(CONTROLLERS), "--controllers")
    except argparse.ArgumentTypeError as err:
        parser.error(str(err))
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="taas-bench-operator-"))
    print(f"[bench] work dir {workdir}", file=sys.stderr, flush=True)

    results: list[RunResult] = []
    for key in workload_keys:
        workload = catalogue[key]
        for name in controller_names:
            started = time.monotonic()
            print(f"[bench] ({key}) {workload.title}: {name} ...", file=sys.stderr, flush=True)
            result = run_one(
                CONTROLLERS[name], workload, workdir / f"{key}-{name}", args.keep_files
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

    workloads = [catalogue[k] for k in workload_keys]
    print(table(results, workloads))
    print()
    print(breakdown(results))
    if args.json:
        Path(args.json).write_text(json.dumps([r.model_dump() for r in results], indent=2))
    return 1 if any(r.broken for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
