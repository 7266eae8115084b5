"""End-to-end workload: one TFJob on a real cluster, TaaS against training-operator.

    python -m bench.operator e2e [--rounds 2] [--job examples/mnist/async.yaml] [--json FILE]
                                 [--nodes 3]     # real nodes (default 1)

Needs root (taas_controlplane.cluster: kubelet, containerd, CoreDNS, kube-proxy, kube-router).
The same TFJob (default: examples/mnist/async.yaml, 1 PS + 2 workers of real TensorFlow in the
trainer image, already imported into the node) is applied under each controller in turn, on the
same node, in a fresh namespace each time; every round runs both controllers, alternating who
goes first, so the machine's noise spreads evenly. Both controllers run out of cluster with an
admin kubeconfig, started as bench/harness/controllers.py starts them (each with its own TFJob
CRD, applied before its runs). Figures per run, from `kubectl apply`:

- all pods Running: every replica pod of the job is in phase Running (the kubelet started them);
- Succeeded: the job's Succeeded condition is True.

Each run also records on how many nodes its pods ran (with `--nodes 3`, the default scheduler
spreads the job's pods over the nodes; the report says how many runs spanned more than one).

The report gives the median of each figure per controller and the ratio TaaS / training-operator
(below 1.00: TaaS is faster).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from bench.harness.contest import REPO, contest, contest_table
from taas_controlplane.cluster.cluster import Cluster

SELECTOR = "training.kubeflow.org/job-name"


class E2ERun(BaseModel):
    """One TFJob under one controller."""

    controller: str
    round: int
    all_running_s: float | None = None
    succeeded_s: float | None = None
    nodes_used: int = 0
    error: str | None = None


def _job(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text()))


def _status(cluster: Cluster, ns: str, name: str) -> tuple[int, int, bool, bool, int]:
    """(pods, pods Running, Succeeded, Failed, nodes the pods are on) of the job now."""
    pods = json.loads(
        cluster.kubectl("get", "pods", "-n", ns, "-l", f"{SELECTOR}={name}", "-o", "json").stdout
    )["items"]
    running = sum(1 for p in pods if p["status"].get("phase") == "Running")
    nodes = {p["spec"].get("nodeName") for p in pods} - {None}
    job = json.loads(cluster.kubectl("get", "tfjob", "-n", ns, name, "-o", "json").stdout)
    conditions = {c["type"]: c["status"] for c in (job.get("status") or {}).get("conditions") or []}
    return (
        len(pods),
        running,
        conditions.get("Succeeded") == "True",
        (conditions.get("Failed") == "True"),
        len(nodes),
    )


def run_job(
    cluster: Cluster, controller: str, round_: int, tfjob: dict[str, Any], timeout: float
) -> E2ERun:
    """Apply the job in a fresh namespace and time it until Succeeded (or Failed/timeout)."""
    replicas = sum(int(s.get("replicas", 1)) for s in tfjob["spec"]["tfReplicaSpecs"].values())
    name = tfjob["metadata"]["name"]
    ns = f"bench-{controller}-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", ns)
    result = E2ERun(controller=controller, round=round_)
    started = time.monotonic()
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(tfjob))
    try:
        while time.monotonic() - started < timeout:
            pods, running, succeeded, failed, nodes = _status(cluster, ns, name)
            now = time.monotonic() - started
            if result.all_running_s is None and pods == replicas and running == replicas:
                result.all_running_s = now
                result.nodes_used = nodes
            if succeeded:
                result.succeeded_s = now
                return result
            if failed:
                result.error = "the job Failed"
                return result
            time.sleep(0.2)
        result.error = f"not Succeeded after {timeout:.0f}s"
        return result
    finally:
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def report(runs: list[E2ERun]) -> str:
    """Medians per controller and the ratio TaaS / training-operator."""
    figures = [("all_running_s", "all pods Running"), ("succeeded_s", "Succeeded")]
    table = contest_table(runs, figures, "figure (median s from kubectl apply)")
    spread = sum(1 for r in runs if r.nodes_used > 1)
    return (
        f"{table}\nruns: {len(runs)}, failed: {sum(1 for r in runs if r.error)}, "
        f"pods on more than one node: {spread} of {len(runs)}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.operator e2e", description=__doc__)
    parser.add_argument("--rounds", type=int, default=2, help="runs per controller")
    parser.add_argument("--job", type=Path, default=REPO / "examples" / "mnist" / "async.yaml")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--json", metavar="FILE", help="also write every run as JSON")
    parser.add_argument("--nodes", type=int, default=1, help="real nodes (default 1)")
    args = parser.parse_args(argv)
    if args.nodes < 1:
        parser.error("--nodes must be at least 1")
    tfjob = _job(args.job)
    workdir = Path(tempfile.mkdtemp(prefix="taas-bench-e2e-"))
    cluster = Cluster(workdir / "node", nodes=args.nodes)
    return contest(
        cluster,
        workdir,
        args.rounds,
        "bench e2e",
        lambda name, round_: [run_job(cluster, name, round_, tfjob, args.timeout)],
        report,
        args.json,
    )


if __name__ == "__main__":
    sys.exit(main())
