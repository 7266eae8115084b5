"""Dashboard figures: the list with many TFJobs in a headless browser, the server's memory, and
a job page following many replicas. Ratios and values printed; nothing here is a timed test.

    python -m bench.dashboard                 # 1,000 TFJobs, a 64-replica job
    python -m bench.dashboard --jobs 200 --replicas 16

On a fresh control plane (no operator: the TFJobs and pods are created by this script, pod
phases written as a kubelet would): `taas dashboard` runs as its own process (its RSS is read
from /proc), Debian's chromium opens the page. Figures:
- list render: navigation start -> every row in the table, for N jobs and for 1 job (the
  baseline in the same run), and their ratio;
- memory: the server's RSS with no job, with N jobs listed, and after every job's status has
  changed twice while a page watched (bounded: one summary per job, no per-change queue);
- 64 replicas: time from writing the last pod's phase to the page showing every replica Running.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.processes import spawn, stop
from tests.crds import install_crd
from tests.dashboard.dashboard_harness import launch_chromium
from tests.harness.operator_run import (
    Api,
    tfjob,
)
from tests.harness.waiting import wait

REPO = Path(__file__).resolve().parents[2]

CRD = REPO / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def apply_jobs(plane: ControlPlane, ns: str, count: int, prefix: str) -> None:
    docs = []
    for i in range(count):
        manifest = tfjob(f"{prefix}-{i:04d}", {"PS": {"replicas": 1}, "Worker": {"replicas": 2}})
        manifest["metadata"]["namespace"] = ns
        docs.append(manifest)
    for start in range(0, count, 250):
        chunk = yaml.safe_dump_all(docs[start : start + 250])
        plane.kubectl("apply", "-f", "-", input=chunk)


def new_page(browser: Any) -> Any:
    """A page whose wait_for_function may evaluate (the dashboard's CSP forbids eval)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    return context.new_page()


def list_render_ms(browser: Any, url: str, rows: int) -> float:
    page = new_page(browser)
    page.goto(url)
    page.wait_for_function(
        f"document.querySelectorAll('#jobs-body tr').length >= {rows}", timeout=120_000
    )
    ms = float(page.evaluate("performance.now()"))
    page.close()
    return ms


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--replicas", type=int, default=64)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="taas-bench-dashboard-"))
    with ControlPlane() as plane, sync_playwright() as playwright:
        install_crd(plane, CRD)
        admin = Api(plane.kubeconfig)
        plane.kubectl("create", "namespace", "one")
        plane.kubectl("create", "namespace", "many")
        log = work / "dashboard.log"
        with log.open("wb") as out:
            proc = spawn(
                [
                    "taas",
                    "dashboard",
                    "--kubeconfig",
                    plane.kubeconfig,
                    "--port",
                    "0",
                    "-n",
                    "one",
                    "-n",
                    "many",
                    "-n",
                    "wide",
                ],
                stdout=out,
            )
        browser = launch_chromium(playwright)
        try:
            url = wait(lambda: re.search(r"(http://\S+)", log.read_text()), "the URL").group(1)
            time.sleep(2)
            rss_empty = rss_mib(proc.pid)
            apply_jobs(plane, "one", 1, "single")
            base = url + "?ns=one"
            time.sleep(2)
            one_ms = min(list_render_ms(browser, base, 1) for _ in range(3))
            started = time.monotonic()
            apply_jobs(plane, "many", args.jobs, "job")
            created_s = time.monotonic() - started
            wait(
                lambda: (
                    len(admin.get("/apis/kubeflow.org/v1/namespaces/many/tfjobs")["items"])
                    == args.jobs
                ),
                "the jobs",
                timeout=300,
            )
            time.sleep(3)
            total = args.jobs + 1
            many_ms = min(list_render_ms(browser, url, total) for _ in range(3))
            rss_listed = rss_mib(proc.pid)
            # Churn while a page watches: every job's status written twice.
            watcher = new_page(browser)
            watcher.goto(url)
            watcher.wait_for_function(
                f"document.querySelectorAll('#jobs-body tr').length >= {total}", timeout=120_000
            )
            for round_ in range(2):
                for i in range(args.jobs):
                    path = f"/apis/kubeflow.org/v1/namespaces/many/tfjobs/job-{i:04d}/status"
                    cond = {
                        "type": "Created",
                        "status": "True",
                        "reason": "TFJobCreated",
                        "message": f"round {round_}",
                    }
                    admin.merge_patch(path, {"status": {"conditions": [cond]}})
            watcher.wait_for_function(
                "[...document.querySelectorAll('#jobs-body tr[data-state=\"Created\"]')].length"
                f" >= {args.jobs}",
                timeout=120_000,
            )
            rss_churned = rss_mib(proc.pid)
            watcher.close()
            replicas_s = follow_replicas(plane, admin, browser, url, args.replicas)
        finally:
            browser.close()
            stop(proc, grace=5)
    print(f"\nDashboard figures ({args.jobs} TFJobs; {args.replicas}-replica job), one run:\n")
    print("| figure | value | baseline (same run) | ratio |")
    print("| --- | --- | --- | --- |")
    print(
        f"| list rendered in headless chromium ({total} jobs) | {many_ms:.0f} ms | "
        f"{one_ms:.0f} ms (1 job) | {many_ms / one_ms:.2f}x |"
    )
    print(
        f"| server RSS with {total} jobs listed | {rss_listed:.1f} MiB | "
        f"{rss_empty:.1f} MiB (no job) | {rss_listed / rss_empty:.2f}x |"
    )
    print(
        f"| server RSS after {2 * args.jobs} status changes watched live | {rss_churned:.1f} "
        f"MiB | {rss_listed:.1f} MiB (listed) | {rss_churned / rss_listed:.2f}x |"
    )
    print(
        f"| job page: last of {args.replicas} pods Running -> every row Running | "
        f"{replicas_s * 1000:.0f} ms | | |"
    )
    print(f"\n({args.jobs} TFJobs applied in {created_s:.1f} s)")
    return 0


def follow_replicas(plane: ControlPlane, admin: Api, browser: Any, url: str, count: int) -> float:
    """A job with `count` workers and its pods (as the operator names and labels them)."""
    plane.kubectl("create", "namespace", "wide")
    admin.create_tfjob("wide", tfjob("wide", {"Worker": {"replicas": count}}))
    for i in range(count):
        labels = {
            "training.kubeflow.org/job-name": "wide",
            "training.kubeflow.org/replica-type": "worker",
            "training.kubeflow.org/replica-index": str(i),
        }
        admin.create(
            "/api/v1/namespaces/wide/pods",
            {
                "metadata": {"name": f"wide-worker-{i}", "labels": labels},
                "spec": {"containers": [{"name": "tensorflow", "image": "example.com/t:1"}]},
            },
        )
    page = new_page(browser)
    page.goto(url + "#/job/wide/wide")
    page.wait_for_function(f"document.querySelectorAll('#replicas-body tr').length === {count}")
    for i in range(count):
        admin.set_pod_phase("wide", f"wide-worker-{i}", "Running")
    written = time.monotonic()
    page.wait_for_function(
        "document.querySelectorAll('#replicas-body tr[data-phase=\"Running\"]').length"
        f" === {count}",
        timeout=60_000,
    )
    elapsed = time.monotonic() - written
    page.close()
    return elapsed


if __name__ == "__main__":
    sys.exit(main())
