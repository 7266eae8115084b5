"""`python -m bench.operator.bigjob`: the operator's memory for one big TFJob (issue 29).

    python -m bench.operator.bigjob                           # 100, 1,000 and 5,000 replicas
    python -m bench.operator.bigjob --replicas 100,1000 --before /path/to/old/checkout
    python -m bench.operator.bigjob --json out.json

For each size, on a fresh control plane (`measure.staged`: TaaS started, warmed up, settled): one
TFJob of N workers in a namespace whose ResourceQuota admits at most `--pod-quota` pods
(default 1,000). Every pod of an N-replica job names all N hosts, so the pods of a 5,000-replica
job would put about 2 GB into etcd, past its default quota; the quota refuses the rest, as a
tenant's would (no quota controller runs here: the quota's status is written by hand, admission
counts from it). The pass that builds the missing pods, every service, the status and the
refusals run at full size. Figures: the controller's RSS when idle before the job, its peak
growth above that until the job's pods (up to the quota) and as many services exist and it is
quiet again, its growth at the end, and the seconds that took. With `--before DIR` the same
runs with the operator of another checkout (DIR/operator on PYTHONPATH) and the table shows the
ratios.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from kubernetes import client
from pydantic import BaseModel

from bench.harness.controllers import Controller, TaasController
from bench.harness.procstats import settle
from bench.harness.table import figure, ratio
from bench.harness.workloads import tfjob_manifest
from bench.operator.measure import MIB, NAMESPACE, staged
from taas_operator.api.quantity import parse_quantity

QUOTA = "pods"


class BigJobResult(BaseModel):
    """One controller, one job size."""

    controller: str
    replicas: int
    pods: int = 0
    services: int = 0
    seconds: float | None = None
    idle_rss_mib: float | None = None
    peak_growth_mib: float | None = None
    end_growth_mib: float | None = None
    broken: str | None = None


def _quota(api: client.ApiClient, pods: int) -> None:
    core = client.CoreV1Api(api)
    hard = {"pods": str(pods)}
    body = client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name=QUOTA), spec=client.V1ResourceQuotaSpec(hard=hard)
    )
    core.create_namespaced_resource_quota(NAMESPACE, body)
    status = {"status": {"hard": hard, "used": {"pods": "0"}}}
    core.patch_namespaced_resource_quota_status(QUOTA, NAMESPACE, status)


def _counts(api: client.ApiClient) -> tuple[int, int]:
    core = client.CoreV1Api(api)
    used = core.read_namespaced_resource_quota(QUOTA, NAMESPACE).status.used or {}
    services = core.list_namespaced_service(NAMESPACE, limit=1)
    made = len(services.items) + int(services.metadata.remaining_item_count or 0)
    return int(parse_quantity(used.get("pods", 0)) or 0), made  # the quota writes 1000 as "1k"


def run_big_job(
    controller: Controller, replicas: int, pod_quota: int, workdir: Path, timeout_s: float
) -> BigJobResult:
    """One TFJob of `replicas` workers under a pod quota, the controller's memory measured."""
    result = BigJobResult(controller=controller.name, replicas=replicas)
    try:
        with staged(controller, workdir) as stage:
            _quota(stage.api, pod_quota)
            settle(stage.sampler, stage.running, 5.0)
            idle = stage.sampler.sample().rss_bytes
            stage.sampler.peak_rss_bytes = idle
            custom = client.CustomObjectsApi(stage.api)
            job = tfjob_manifest("big", NAMESPACE, 0, replicas)
            start = time.monotonic()
            custom.create_namespaced_custom_object("kubeflow.org", "v1", NAMESPACE, "tfjobs", job)
            # a capped job's passes back off once the quota refuses: its services come slowly
            wanted = (min(replicas, pod_quota), min(replicas, pod_quota))
            while time.monotonic() - start < timeout_s and stage.running.alive():
                result.pods, result.services = _counts(stage.api)
                if (result.pods, result.services) >= wanted:
                    break
                time.sleep(0.5)
            result.seconds = round(time.monotonic() - start, 1)
            settle(stage.sampler, stage.running, 30.0)
            end = stage.sampler.sample().rss_bytes
            result.idle_rss_mib = round(idle / MIB, 1)
            result.peak_growth_mib = round((stage.sampler.peak_rss_bytes - idle) / MIB, 1)
            result.end_growth_mib = round((end - idle) / MIB, 1)
            if not stage.running.alive():
                result.broken = f"exited:\n{stage.running.log_tail()}"
            elif (result.pods, result.services) < wanted:
                result.broken = f"timed out: {result.pods} pods, {result.services} services"
    except Exception as exc:  # a broken run is reported, the others still run
        result.broken = f"{type(exc).__name__}: {exc}"
    return result


def table(results: list[BigJobResult]) -> str:
    """One row per size and controller; with `--before`, the ratio of the peak growths."""
    before = {r.replicas: r for r in results if r.controller == "taas-before"}
    head = ("controller", "replicas", "pods/svcs", "s", "idle MiB", "peak+ MiB", "end+ MiB")
    lines = ["".join(f"{h:>12}" for h in (*head, "peak/before"))]
    for r in results:
        base = before.get(r.replicas)
        cells = (
            r.controller,
            f"{r.replicas:,}",
            f"{r.pods}/{r.services}",
            figure(r.seconds),
            figure(r.idle_rss_mib),
            figure(r.peak_growth_mib),
            figure(r.end_growth_mib),
            ratio(r.peak_growth_mib, base.peak_growth_mib) if base and base is not r else "-",
        )
        lines.append("".join(f"{c:>12}" for c in cells) + ("  BROKEN" if r.broken else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.operator.bigjob", description=__doc__)
    parser.add_argument("--replicas", default="100,1000,5000", help="job sizes (comma-separated)")
    parser.add_argument("--pod-quota", type=int, default=1000, help="pods the namespace admits")
    parser.add_argument("--before", metavar="DIR", help="also run this checkout's operator")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--workdir", metavar="DIR", help="logs and control planes (default tmp)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    sizes = [int(s) for s in args.replicas.split(",") if s.strip()]
    controllers: list[Controller] = [TaasController("taas", "TaaS")]
    if args.before:
        before = str(Path(args.before).resolve() / "operator")
        controllers.insert(0, TaasController("taas-before", "TaaS before", {"PYTHONPATH": before}))
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-bigjob-"))
    results = []
    for size in sizes:
        for controller in controllers:
            run_dir = workdir / f"{controller.name}-{size}"
            result = run_big_job(controller, size, args.pod_quota, run_dir, args.timeout)
            print(result.model_dump_json(), flush=True)
            results.append(result)
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps([r.model_dump() for r in results], indent=1))
    return 1 if any(r.broken for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
