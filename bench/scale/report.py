"""The table of the simulated-cluster benchmark, the goals of issue 22 checked against it, and
each controller's requests per pod.

    table(results, scenarios) -> str
    goals(results) -> str
    breakdown(results) -> str

Columns: TaaS, training-operator v1.8.1, the floor, and the ratios TaaS / training-operator and
TaaS / floor (below 1.00: TaaS is faster or uses less), all from the same run; the last column
says what the figure is held to (the goal, or SIG Scalability's pod-startup SLO).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bench.harness.table import figure, ratio, row
from bench.scale.results import POD_STARTUP_SLO_S, ScaleResult
from bench.scale.scenarios import Scenario

ORDER = ("taas", "kubeflow", "floor")
HEADERS = ("TaaS", "t-op", "floor", "TaaS/t-op", "TaaS/floor", "held to")
WIDTH, CELL, LAST = 46, 12, 22  # a cell holds "10000/10000"

Figure = tuple[str, Callable[[ScaleResult], float | None], str]
LOAD: list[Figure] = [
    ("apply -> all pods created (s)", lambda r: r.all_created_s, ""),
    ("apply -> all pods bound to nodes (s)", lambda r: r.all_bound_s, ""),
    ("apply -> all pods Running (s)", lambda r: r.all_running_s, "<=0.5x t-op, 1.5x floor"),
    ("apply -> all done (s)", lambda r: r.all_done_s, ""),
    ("  workers ended -> all done (s)", lambda r: r.finish_s, ""),
    ("  all done -> PS pods deleted (s)", lambda r: r.cleaned_s, "cleanPodPolicy Running"),
    ("pod start p50, creation -> Running (s)", lambda r: r.pod_start_p50_s, ""),
    ("pod start p99 (s)", lambda r: r.pod_start_p99_s, f"SLO p99 <= {POD_STARTUP_SLO_S:.0f} s"),
    ("pod start max (s)", lambda r: r.pod_start_max_s, ""),
    ("  p50 by the pods' stamps (whole s)", lambda r: r.pod_start_stamped_p50_s, ""),
    ("  p99 by the pods' stamps (whole s)", lambda r: r.pod_start_stamped_p99_s, "SLO p99 <= 5 s"),
    ("  creation -> bound to a node, p99 (s)", lambda r: r.pod_bound_p99_s, ""),
    ("  bound -> Running (kwok), p99 (s)", lambda r: r.pod_bound_to_running_p99_s, ""),
    ("controller writes per pod (audit)", lambda r: r.controller_writes_per_pod, "<= t-op"),
    ("apiserver writes per pod, all clients", lambda r: r.api_writes_per_pod, ""),
    ("controller GET+LIST per pod (audit)", lambda r: r.controller_reads_per_pod, ""),
    ("controller CPU (s)", lambda r: r.cpu_s, ""),
    ("controller CPU per pod (ms)", lambda r: r.cpu_ms_per_pod, "<= t-op"),
    ("controller RSS idle (MiB)", lambda r: r.idle_rss_mib, ""),
    ("RSS growth per 1,000 pods (MiB)", lambda r: r.rss_growth_per_1000_pods_mib, "<= t-op"),
    ("controller peak RSS (MiB)", lambda r: r.peak_rss_mib, ""),
]
LOSS: list[Figure] = [
    ("replicas on the silent nodes", lambda r: float(r.lost_replicas), ""),
    ("silent -> nodes NotReady (s)", lambda r: r.silent_to_not_ready_s, "the cluster's timing"),
    ("NotReady -> last lost pod evicted (s)", lambda r: r.not_ready_to_evicted_s, "eviction rate"),
    ("eviction -> replacement Running, max (s)", lambda r: r.evicted_to_replaced_max_s, "<= 15 s"),
    ("NotReady -> every lost replica Running (s)", lambda r: r.not_ready_to_replaced_s, ""),
    ("NotReady -> job Running again (s)", lambda r: r.not_ready_to_job_running_s, ""),
    ("replicas with 2 pods Running at once", lambda r: _count(r.duplicates), "0"),
]


def _count(value: int | None) -> float | None:
    return None if value is None else float(value)


def _row(name: str, cells: Sequence[str], last: str = "") -> str:
    return row(name, cells, WIDTH, CELL, f"{last:<{LAST}}")


def _state(run: ScaleResult | None, scenario: Scenario) -> str:
    if run is None:
        return "not run"
    if run.broken:
        return "BROKEN"
    if scenario.node_loss:
        return f"{run.replaced}/{run.lost_replicas}"
    return f"{run.pods_running}/{run.pods}"


def table(results: Sequence[ScaleResult], scenarios: Sequence[Scenario]) -> str:
    by_key = {(r.scenario, r.controller): r for r in results}
    lines = [_row("figure", HEADERS[:-1], HEADERS[-1])]
    lines.append("-" * len(lines[0]))
    for scenario in scenarios:
        runs = [by_key.get((scenario.key, c)) for c in ORDER]
        if not any(runs):
            continue
        lines.append(f"({scenario.key}) {scenario.title}")
        label = "  lost replicas back" if scenario.node_loss else "  pods Running"
        lines.append(_row(label, [_state(r, scenario) for r in runs]))
        for name, get, held in LOSS if scenario.node_loss else LOAD:
            values = [get(r) if r is not None and not r.broken else None for r in runs]
            cells = [figure(v) for v in values]
            cells += [ratio(values[0], values[1]), ratio(values[0], values[2])]
            lines.append(_row(f"  {name}", cells, held))
        for run in runs:
            if run is not None and run.stuck:
                lines.append(f"  {run.controller}: {run.stuck}")
    return "\n".join(lines)


def _goal(label: str, value: float | None, limit: float, unit: str = "x") -> str:
    if value is None:
        return f"  {label}: not measured"
    verdict = "met" if value <= limit else "NOT met"
    return f"  {label}: {value:.2f}{unit} (goal <= {limit:g}{unit}): {verdict}"


def _over(
    get: Callable[[ScaleResult], float | None], run: ScaleResult, other: ScaleResult | None
) -> float | None:
    a, b = get(run), get(other) if other is not None else None
    return None if a is None or b is None or b == 0 else a / b


def goals(results: Sequence[ScaleResult]) -> str:
    """Issue 22's goals, each as measured in this run."""
    by_key = {(r.scenario, r.controller): r for r in results if not r.broken}
    lines = ["goals (issue 22), from this run:"]
    for key in ("d", "e"):
        taas, top, floor = (by_key.get((key, c)) for c in ORDER)
        if taas is None:
            continue
        checks: list[tuple[str, Callable[[ScaleResult], float | None], ScaleResult | None, float]]
        checks = [
            ("all Running, TaaS/t-op", lambda r: r.all_running_s, top, 0.5),
            ("all Running, TaaS/floor", lambda r: r.all_running_s, floor, 1.5),
            ("writes per pod, TaaS/t-op", lambda r: r.controller_writes_per_pod, top, 1.0),
            ("CPU per pod, TaaS/t-op", lambda r: r.cpu_ms_per_pod, top, 1.0),
            (
                "RSS growth per 1,000 pods, TaaS/t-op",
                lambda r: r.rss_growth_per_1000_pods_mib,
                top,
                1.0,
            ),
        ]
        for label, get, other, limit in checks:
            lines.append(_goal(f"({key}) {label}", _over(get, taas, other), limit))
    loss = by_key.get(("f", "taas"))
    if loss is not None:
        lines.append(
            _goal(
                "(f) TaaS eviction -> replacement Running", loss.evicted_to_replaced_max_s, 15, " s"
            )
        )
        lines.append(f"  (f) TaaS duplicates: {loss.duplicates}; stuck: {loss.stuck or 'none'}")
    return "\n".join(lines)


def breakdown(results: Sequence[ScaleResult]) -> str:
    """Each controller's own requests per pod, by verb and resource (audit log)."""
    lines = ["controller requests per pod, by verb and resource (audit log, watches excluded):"]
    for run in sorted(results, key=lambda r: (r.scenario, ORDER.index(r.controller))):
        if run.broken:
            lines.append(
                f"  ({run.scenario}) {run.controller}: BROKEN: {run.broken.splitlines()[0]}"
            )
            continue
        parts = ", ".join(f"{k} {v:g}" for k, v in run.controller_requests.items())
        lines.append(f"  ({run.scenario}) {run.controller}: {parts or 'none'}")
    return "\n".join(lines)
