"""The fairness scenario: one namespace floods the controller, another's jobs wait how long?

    python -m bench.operator fairness [--jobs N] [--controllers taas,kubeflow] [--json FILE]
    run_fairness(controller, jobs, workdir, keep_files=False) -> FairnessResult

On a fresh control plane with the controller started and warmed up (`measure.staged`), namespace
`bench` gets N one-replica TFJobs at once (16 client threads, as workload b); meanwhile namespace
`bench-other` gets one one-replica TFJob every `OTHER_EVERY_S` seconds from the first of the
flood's creations until the flood is created, and one more as it ends (issue 39: tenant B's job
created as A's burst ends got its pod after 56-125 s). Measured: each of the other namespace's
jobs, from its create call to its first pod seen by a watch (`Observer`): p50, p99 and the
worst; and the flood's own time until every one of its pods exists. Ratios go in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from kubernetes import client
from pydantic import BaseModel

from bench.harness.controllers import CONTROLLERS, Controller
from bench.harness.observer import Observer
from bench.harness.workloads import Workload, create_jobs, tfjob_manifest
from bench.operator.measure import NAMESPACE, RunResult, broken_on_error, staged, wait_objects

OTHER_NAMESPACE = "bench-other"
OTHER_EVERY_S = 1.0
TIMEOUT_S = 1800.0


class FairnessResult(BaseModel):
    """One controller under the flood."""

    controller: str
    flood_jobs: int
    broken: str | None = None
    flood_create_s: float | None = None
    flood_pods_s: float | None = None
    other_jobs: int = 0
    other_p50_s: float | None = None
    other_p99_s: float | None = None
    other_max_s: float | None = None


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(q * len(ordered) + 0.999999) - 1))]


def _first_pods(observer: Observer) -> dict[str, float]:
    """job -> when its first pod was seen."""
    first: dict[str, float] = {}
    for record in observer.records():
        if record.kind == "pod":
            first[record.job] = min(first.get(record.job, record.seen_at), record.seen_at)
    return first


def run_fairness(
    controller: Controller, jobs: int, workdir: Path, keep_files: bool = False
) -> FairnessResult:
    """Measure `controller` under a flood of `jobs` TFJobs in one namespace (see the module)."""
    result = FairnessResult(controller=controller.name, flood_jobs=jobs)
    holder = RunResult(controller=controller.name, workload="fairness", jobs=jobs, replicas=1)
    with broken_on_error(holder), staged(controller, workdir, keep_files) as stage:
        core, custom = client.CoreV1Api(stage.api), client.CustomObjectsApi(stage.api)
        core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=OTHER_NAMESPACE))
        )
        flood = Workload(key="flood", title="flood", jobs=jobs, ps=0, workers=1)
        sent: dict[str, float] = {}
        with (
            Observer(stage.api, NAMESPACE).start() as flooded,
            Observer(stage.api, OTHER_NAMESPACE).start() as other,
        ):
            created = threading.Event()
            started = time.monotonic()

            def make_flood() -> None:
                try:
                    create_jobs(stage.api, NAMESPACE, flood)
                finally:
                    created.set()

            thread = threading.Thread(target=make_flood, daemon=True)
            thread.start()
            index = 0
            while True:
                ending = created.wait(OTHER_EVERY_S)
                name = f"other-{index:04d}"
                sent[name] = time.monotonic()
                body = tfjob_manifest(name, OTHER_NAMESPACE, 0, 1)
                custom.create_namespaced_custom_object(
                    "kubeflow.org", "v1", OTHER_NAMESPACE, "tfjobs", body
                )
                index += 1
                if ending:
                    break
            thread.join()
            result.flood_create_s = time.monotonic() - started
            expected = dict.fromkeys(flood.job_names(), 1)
            done = wait_objects(flooded, stage, expected, started + TIMEOUT_S)
            if len(done) == jobs:
                result.flood_pods_s = max(done.values()) - started
            wait_objects(other, stage, dict.fromkeys(sent, 1), time.monotonic() + 120)
            first = _first_pods(other)
        waits = [first[name] - at for name, at in sent.items() if name in first]
        result.other_jobs = len(sent)
        if waits:
            result.other_p50_s = statistics.median(waits)
            result.other_p99_s = _percentile(waits, 0.99)
            result.other_max_s = max(waits)
        if len(waits) < len(sent):
            result.broken = f"{len(sent) - len(waits)} of the other namespace's jobs got no pod"
    result.broken = result.broken or holder.broken
    return result


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def table(results: list[FairnessResult]) -> str:
    """One row per controller: the other namespace's first-pod wait, the flood's time."""
    head = (
        "| controller | flood jobs | other's jobs | other's first pod p50 s | p99 s | worst s "
        "| flood created in s | flood's pods all made in s |"
    )
    lines = [head, "|" + " --- |" * 8]
    for r in results:
        lines.append(
            f"| {r.controller} | {r.flood_jobs} | {r.other_jobs} | {_cell(r.other_p50_s)} | "
            f"{_cell(r.other_p99_s)} | {_cell(r.other_max_s)} | {_cell(r.flood_create_s)} | "
            f"{_cell(r.flood_pods_s)} |"
            + (f" BROKEN: {r.broken.splitlines()[0]}" if r.broken else "")
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.operator fairness",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--jobs", type=int, default=3000, help="TFJobs of the flood (3000)")
    parser.add_argument("--controllers", default="taas,kubeflow", help="(default taas,kubeflow)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--workdir", metavar="DIR", help="logs and control planes (default tmp)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.controllers.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONTROLLERS]
    if unknown or not names or args.jobs < 1:
        parser.error(f"--controllers: choose from {','.join(CONTROLLERS)}; --jobs: at least 1")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="taas-bench-fairness-"))
    results = []
    for name in names:
        print(f"[bench] fairness, {args.jobs} jobs: {name} ...", file=sys.stderr, flush=True)
        results.append(run_fairness(CONTROLLERS[name], args.jobs, workdir / name))
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps([r.model_dump() for r in results], indent=2))
    return 1 if any(r.broken for r in results) else 0
