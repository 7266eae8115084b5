"""The table: one row per figure and workload, one column per controller, and the ratios
TaaS / training-operator and TaaS / floor (below 1.00 means TaaS is lower: faster, fewer
requests, less CPU or memory).

    table(results, workloads) -> str
    breakdown(results) -> str        # the controller's own requests per job, by verb/resource
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bench.operator.measure import RunResult
from bench.operator.workloads import Workload

ORDER = ("taas", "kubeflow", "floor")
HEADERS = ("TaaS", "training-op", "floor", "TaaS/t-op", "TaaS/floor")

Figure = tuple[str, str, Callable[[RunResult], float | None]]
FIGURES: list[Figure] = [
    ("create -> all pods+services, total", "s", lambda r: r.total_s),
    ("  per job p50", "s", lambda r: r.p50_s),
    ("  per job p99", "s", lambda r: r.p99_s),
    ("apiserver writes per job (/metrics)", "", lambda r: r.api_writes_per_job),
    ("controller writes per job (audit)", "", lambda r: r.controller_writes_per_job),
    ("controller GET+LIST per job (audit)", "", lambda r: r.controller_reads_per_job),
    ("controller CPU", "s", lambda r: r.cpu_s),
    ("controller peak RSS", "MiB", lambda r: r.peak_rss_mib),
    ("controller RSS after settle", "MiB", lambda r: r.end_rss_mib),
]


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}x"


def table(results: Sequence[RunResult], workloads: Sequence[Workload]) -> str:
    """The one table of the operator benchmark."""
    by_key = {(r.workload, r.controller): r for r in results}
    width = 44
    lines = [f"{'figure':<{width}}" + "".join(f"{h:>13}" for h in HEADERS)]
    lines.append("-" * len(lines[0]))
    for workload in workloads:
        runs = {c: by_key.get((workload.key, c)) for c in ORDER}
        if not any(runs.values()):
            continue
        lines.append(f"({workload.key}) {workload.title}")
        states = []
        for c in ORDER:
            run = runs[c]
            if run is None:
                states.append("not run")
            elif run.broken:
                states.append("BROKEN")
            else:
                states.append(f"{run.complete_jobs}/{run.jobs}")
        lines.append(f"{'  jobs complete':<{width}}" + "".join(f"{s:>13}" for s in states))
        for label, unit, get in FIGURES:
            values = [
                get(run) if run is not None and not run.broken else None
                for run in (runs[c] for c in ORDER)
            ]
            name = f"  {label}" + (f" ({unit})" if unit else "")
            cells = [_fmt(v) for v in values]
            cells += [_ratio(values[0], values[1]), _ratio(values[0], values[2])]
            lines.append(f"{name:<{width}}" + "".join(f"{c:>13}" for c in cells))
    return "\n".join(lines)


def breakdown(results: Sequence[RunResult]) -> str:
    """Each controller's own requests per job (audit log), by verb and resource."""
    lines = ["controller requests per job, by verb and resource (audit log, watches excluded):"]
    for run in sorted(results, key=lambda r: (r.workload, ORDER.index(r.controller))):
        if run.broken:
            lines.append(
                f"  ({run.workload}) {run.controller}: BROKEN: {run.broken.splitlines()[0]}"
            )
            continue
        parts = ", ".join(f"{k} {v:g}" for k, v in run.controller_requests.items())
        lines.append(f"  ({run.workload}) {run.controller}: {parts}")
    return "\n".join(lines)
