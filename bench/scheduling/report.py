"""The bench's table, with Kueue's own published scale figures beside it.

Kueue's figures (its `test/performance/scheduler` runs, on envtest: an apiserver without nodes
or kubelets, so they measure Kueue alone): 15,000 workloads admitted in about 351 s (the test's
limit 425 s); average time to admission at most 23 s, 90 s and 260 s for its three workload
classes. Ours include everything a job goes through on a cluster: the operator, Kueue,
coscheduling, the scheduler, the simulated kubelets.
"""

from __future__ import annotations

from bench.scheduling.gangs import GangResult

KUEUE_PUBLISHED = (
    "Kueue's own scale test (envtest, Kueue alone): 15,000 workloads admitted in ~351 s "
    "(limit 425 s); average time to admission limits 23 s / 90 s / 260 s by workload class."
)


FIGURES = (
    ("created -> admitted by Kueue", "admit_s"),
    ("admitted -> operator made every pod", "create_s"),
    ("last pod made -> whole gang placed", "place_s"),
    ("admitted -> whole gang Running", "start_s"),
    ("created -> Succeeded", "total_s"),
)


def comparison(results: dict[str, GangResult]) -> str:
    """Each figure's median, per controller, and as a ratio to the last one (the baseline)."""
    labels = list(results)
    baseline = results[labels[-1]]
    rows = [f"medians (s){'':<27}" + "".join(f"{label:>28}" for label in labels) + "   ratio"]
    for label, attr in FIGURES:
        medians = [results[name].percentiles(attr)[0] for name in labels]
        base = baseline.percentiles(attr)[0]
        ratios = " / ".join(f"{m / base:.2f}x" if base else "-" for m in medians[:-1])
        rows.append(f"{label:<38}" + "".join(f"{m:>28.1f}" for m in medians) + f"   {ratios}")
    rows.append(
        "makespan (s)" + " " * 26 + "".join(f"{results[n].makespan_s:>28.1f}" for n in labels)
    )
    return "\n".join(rows)


def table(result: GangResult) -> str:
    shape = result.shape
    rows = [
        f"{shape.jobs} TFJobs of {shape.min_workers}-{shape.max_workers} workers (1 GPU each), "
        f"{shape.nodes} nodes x 8 GPUs, {shape.queues} queues x {shape.quota} GPUs, "
        f"containers run {shape.run_seconds:.0f} s",
        "",
        f"{'per job (s)':<38}{'median':>8}{'p99':>8}{'max':>8}{'mean':>8}",
    ]
    for label, attr in FIGURES:
        median, p99, most = result.percentiles(attr)
        values = [getattr(j, attr) for j in result.jobs]
        mean = sum(values) / len(values) if values else 0.0
        rows.append(f"{label:<38}{median:>8.1f}{p99:>8.1f}{most:>8.1f}{mean:>8.1f}")
    rows += [
        "",
        f"jobs measured: {len(result.jobs)} of {shape.jobs}; makespan (first create -> last "
        f"Succeeded): {result.makespan_s:.1f} s",
        "peak GPUs per queue, Kueue admitted / pods held (quota "
        f"{shape.quota}): "
        + ", ".join(
            f"q{q} {result.peak_admitted.get(q, 0)}/{result.peak_held.get(q, 0)}"
            for q in range(shape.queues)
        ),
        KUEUE_PUBLISHED,
    ]
    return "\n".join(rows)
