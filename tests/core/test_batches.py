"""A big job is planned in batches (engine.batches): a pass builds a bounded share of its pods
and services, asks to run again at once, and the passes together make every replica once.
Issue 29: every missing pod was built in one pass, each naming every host, so a pass of a
5,000-replica job took gigabytes."""

from __future__ import annotations

import json
import time
import tracemalloc
from datetime import UTC, datetime

from taas_operator.api import parse_tfjob
from taas_operator.api.constants import MAX_REPLICAS
from taas_operator.dashboard.views import replica_views
from taas_operator.planner import ObservedPod, plan_job
from taas_operator.planner.batches import BATCH_BYTES, MAX_BATCH, list_page, pod_batch

from .helpers import job, manifest, pod

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _made(manifests: list[dict]) -> list[ObservedPod]:
    """The created pods as the watch shows them (Pending)."""
    out = []
    for m in manifests:
        labels = m["metadata"]["labels"]
        rtype = {"ps": "PS", "worker": "Worker"}[labels["training.kubeflow.org/replica-type"]]
        out.append(pod(rtype, int(labels["training.kubeflow.org/replica-index"]), "Pending"))
    return out


def test_a_pass_of_a_5000_replica_job_builds_one_bounded_batch() -> None:
    big = job({"PS": 10, "Worker": 4990})
    tracemalloc.start()
    plan = plan_job(big, [], NOW, services=[])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    pods_bytes = sum(len(json.dumps(p)) for p in plan.create_pods)
    assert 1 <= len(plan.create_pods) < 5000
    assert pods_bytes <= 2 * BATCH_BYTES  # the estimate leaves out labels and the like
    assert peak < 4 * BATCH_BYTES, peak / 2**20  # built once: was ~2.9 GB for the whole job
    assert len(plan.create_services) == MAX_BATCH
    assert plan.requeue_at == NOW  # the rest at once, in the next pass


def test_the_passes_make_every_replica_once_in_index_order() -> None:
    big = job({"PS": 10, "Worker": 2990})
    made: list[ObservedPod] = []
    services: list[str] = []
    passes = 0
    while True:
        plan = plan_job(big, made, NOW, services=services)
        passes += 1
        if not plan.create_pods and not plan.create_services:
            break
        made += _made(plan.create_pods)
        services += [s["metadata"]["name"] for s in plan.create_services]
        assert (plan.requeue_at == NOW) == (len(made) < 3000 or len(services) < 3000)
        assert passes < 100
    assert sorted(p.name for p in made) == sorted(set(p.name for p in made))
    assert len(made) == 3000 and len(set(services)) == 3000
    assert [p.index for p in made if p.replica_type == "Worker"] == list(range(2990))


def test_small_jobs_are_made_in_one_pass() -> None:
    plan = plan_job(job({"PS": 4, "Worker": 60}), [], NOW, services=[])
    assert len(plan.create_pods) == 64 and len(plan.create_services) == 64
    assert plan.requeue_at is None


def test_a_big_template_makes_the_batch_smaller() -> None:
    obj = manifest({"Worker": 1000})
    container = obj["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["args"] = ["x" * 1_000_000]  # 1 MB a pod
    plan = plan_job(parse_tfjob(obj), [], NOW, services=[])
    assert 1 <= len(plan.create_pods) <= pod_batch(1_000_000) < 50


def test_suspending_a_5000_replica_job_takes_linear_time() -> None:
    big = job({"Worker": 5000}, run_policy={"suspend": True})
    pods = [pod("Worker", i) for i in range(5000)]
    names = [p.name for p in pods]
    start = time.perf_counter()
    plan = plan_job(big, pods, NOW, services=names)
    spent = time.perf_counter() - start
    assert len(plan.delete_pods) == 5000 and len(plan.delete_services) == 5000
    assert spent < 0.5, spent  # the plan's lists were searched per name: 1.9 s here, now 0.05 s


def test_list_pages_shrink_as_pods_grow() -> None:
    assert list_page(4) == 500
    assert 10 <= list_page(5000) < 50


def test_the_dashboard_shows_at_most_max_replicas_slots_of_a_stored_job() -> None:
    stored = manifest({"Worker": 1})
    stored["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 2**31 - 1  # before the CRD's bound
    start = time.perf_counter()
    rows = replica_views(stored, [])
    assert len(rows) == MAX_REPLICAS
    assert time.perf_counter() - start < 5
