"""Issue 29, point 2, operator side: one TFJob near the apiserver's size limit (1.2 MB of
container args, which the apiserver stores) stops no watch. The other jobs of its namespace get
their pods within seconds, the big job gets its own pod (as big: the pod watch carries it), and
the watches still follow once it is deleted; the client's watch (`taas get -w`) reads it too.

Before the fix, the watch event of such a job was longer than aiohttp's 512 KiB line limit
(`LineTooLong`), and the informer watched again from the same resourceVersion, met the same
event, for ever: no job of the namespace (every namespace, for `taas operator -A`) got pods.

No kubelet: nothing here needs a pod to run.
"""

from __future__ import annotations

import itertools
import json
import time

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.client import TFJobClient
from tests.harness.operator_run import (
    Api,
    StartOperator,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(150)]

#: The container args of the big job: 1.2 MB, under etcd's 1.5 MiB request limit.
BIG_ARGS_BYTES = 1_200_000
#: What "within seconds" means for a job created after the big one.
PODS_WITHIN_S = 10.0


@pytest.fixture(scope="module")
def namespaces(admin: Api, start_operator: StartOperator) -> tuple[str, str]:
    shared, other = new_namespace(admin, "big"), new_namespace(admin, "big-other")
    start_operator(shared, other)
    return shared, other


def _small(name: str, replicas: int = 1) -> dict:
    return tfjob(name, {"Worker": {"replicas": replicas}})


def _big(name: str) -> dict:
    args = ["x" * BIG_ARGS_BYTES]
    containers = [{"name": "tensorflow", "image": "example.com/trainer:1", "args": args}]
    return tfjob(name, {"Worker": {"replicas": 1, "containers": containers}})


def _pods_within(admin: Api, ns: str, name: str, count: int, seconds: float) -> float:
    """Seconds until the job has `count` pods (failing past `seconds`)."""
    started = time.monotonic()
    wait(
        lambda: len(admin.pods(ns, name)) == count, f"{count} pods of {ns}/{name}", timeout=seconds
    )
    return time.monotonic() - started


def test_a_job_of_1_2_mb_stops_no_other_job(admin: Api, namespaces: tuple[str, str]) -> None:
    shared, other = namespaces
    before = unique("before")
    admin.create_tfjob(shared, _small(before))
    _pods_within(admin, shared, before, 1, 30.0)  # the operator follows the namespace

    big = unique("big")
    stored = admin.create_tfjob(shared, _big(big))
    assert len(json.dumps(stored)) > BIG_ARGS_BYTES  # the apiserver accepted all of it

    after, elsewhere = unique("after"), unique("elsewhere")
    admin.create_tfjob(shared, _small(after, replicas=2))
    admin.create_tfjob(other, _small(elsewhere))
    _pods_within(admin, shared, after, 2, PODS_WITHIN_S)
    _pods_within(admin, other, elsewhere, 1, PODS_WITHIN_S)
    _pods_within(admin, shared, big, 1, PODS_WITHIN_S)
    pod = next(iter(admin.pods(shared, big).values()))
    assert len(pod["spec"]["containers"][0]["args"][0]) == BIG_ARGS_BYTES

    # A change of the big job (its events are as big) and its deletion: still following.
    admin.patch_tfjob(shared, big, {"metadata": {"labels": {"touched": "yes"}}})
    admin.delete(f"/apis/kubeflow.org/v1/namespaces/{shared}/tfjobs/{big}")
    last = unique("last")
    admin.create_tfjob(shared, _small(last))
    _pods_within(admin, shared, last, 1, PODS_WITHIN_S)


def test_the_client_watch_follows_past_a_job_of_1_2_mb(
    admin: Api, control_plane: ControlPlane
) -> None:
    """`taas get -w` and `TFJobClient.watch/wait` read the same events (before the fix, the big
    job's event ended the watch with aiohttp's LineTooLong)."""
    ns = new_namespace(admin, "big-client")
    client = TFJobClient(kubeconfig=control_plane.kubeconfig, namespace=ns)
    admin.create_tfjob(ns, _small("first"))
    changes = client.watch(timeout=60)
    try:
        first = next(changes)
        assert (first.type, first.job.name) == ("ADDED", "first")
        admin.create_tfjob(ns, _big("big"))
        admin.create_tfjob(ns, _small("after"))
        seen = [(c.type, c.job.name) for c in itertools.islice(changes, 2)]
        assert seen == [("ADDED", "big"), ("ADDED", "after")]
    finally:
        changes.close()
