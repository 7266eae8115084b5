"""The table: one row per figure and workload, one column per controller, and the ratios
TaaS / training-operator (default and 8 threads) and TaaS / floor (below 1.00 means TaaS is
lower: faster, fewer requests, less CPU or memory).

    table(results, workloads) -> str
    breakdown(results) -> str        # the controller's own requests per job, by verb/resource

Workloads (a)-(c) show per-job figures from the creates on; the restart workload (d) shows the
figures of the restarted process (time to the new job's objects, requests per restart).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bench.harness.table import figure, ratio, row
from bench.harness.workloads import Workload
from bench.operator.measure import RunResult

ORDER = ("taas", "kubeflow", "kubeflow8", "floor")
HEADERS = ("TaaS", "t-op", "t-op x8", "floor", "TaaS/t-op", "TaaS/t-op8", "TaaS/floor")

Figure = tuple[str, str, Callable[[RunResult], float | None]]
FIGURES: list[Figure] = [
    ("create -> all pods+services, total", "s", lambda r: r.total_s),
    ("  per job p50", "s", lambda r: r.p50_s),
    ("  per job p99", "s", lambda r: r.p99_s),
    ("apiserver writes per job (/metrics)", "", lambda r: r.api_writes_per_job),
    ("controller writes per job (audit)", "", lambda r: r.controller_writes_per_job),
    ("controller GET+LIST per job (audit)", "", lambda r: r.controller_reads_per_job),
    ("controller CPU", "s", lambda r: r.cpu_s),
    ("controller RSS idle (fixed part)", "MiB", lambda r: r.idle_rss_mib),
    ("controller RSS growth, idle -> settled", "MiB", lambda r: r.rss_growth_mib),
    ("controller peak RSS", "MiB", lambda r: r.peak_rss_mib),
]
RESTART_FIGURES: list[Figure] = [
    ("restart -> new job's pods+services", "s", lambda r: r.total_s),
    ("controller CPU, start -> quiet", "s", lambda r: r.cpu_s),
    ("apiserver writes after restart (/metrics)", "", lambda r: r.api_writes_per_job),
    ("controller GET+LIST after restart (audit)", "", lambda r: r.controller_reads_per_job),
    ("controller RSS before restart", "MiB", lambda r: r.idle_rss_mib),
    ("controller RSS after re-list", "MiB", lambda r: r.end_rss_mib),
]
WIDTH = 44
CELL = 12


def _row(name: str, cells: Sequence[str]) -> str:
    return row(name, cells, WIDTH, CELL)


def _state(run: RunResult | None) -> str:
    if run is None:
        return "not run"
    if run.broken:
        return "BROKEN"
    return f"{run.complete_jobs}/{run.jobs}"


def table(results: Sequence[RunResult], workloads: Sequence[Workload]) -> str:
    """The one table of the operator benchmark."""
    by_key = {(r.workload, r.controller): r for r in results}
    lines = [_row("figure", HEADERS)]
    lines.append("-" * len(lines[0]))
    for workload in workloads:
        runs = [by_key.get((workload.key, c)) for c in ORDER]
        if not any(runs):
            continue
        lines.append(f"({workload.key}) {workload.title}")
        label = "  jobs handled before restart" if workload.restart else "  jobs complete"
        lines.append(_row(label, [_state(run) for run in runs]))
        for name, unit, get in RESTART_FIGURES if workload.restart else FIGURES:
            values = [get(run) if run is not None and not run.broken else None for run in runs]
            cells = [figure(v) for v in values]
            cells += [ratio(values[0], other) for other in (values[1], values[2], values[3])]
            lines.append(_row(f"  {name}" + (f" ({unit})" if unit else ""), cells))
    return "\n".join(lines)


def breakdown(results: Sequence[RunResult]) -> str:
    """Each controller's own requests per job (per restart in (d)), by verb and resource."""
    lines = [
        "controller requests per job (per restart in a restart workload), by verb and resource "
        "(audit log, watches excluded):"
    ]
    for run in sorted(results, key=lambda r: (r.workload, ORDER.index(r.controller))):
        if run.broken:
            lines.append(
                f"  ({run.workload}) {run.controller}: BROKEN: {run.broken.splitlines()[0]}"
            )
            continue
        parts = ", ".join(f"{k} {v:g}" for k, v in run.controller_requests.items())
        lines.append(f"  ({run.workload}) {run.controller}: {parts or 'none'}")
    return "\n".join(lines)
