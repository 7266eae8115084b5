"""kube-apiserver stopped for 10 s while the TaaS operator creates jobs, then started again on
the same etcd and port: the same operator process reconnects its watches and finishes every job
(objects made once, status followed through to Succeeded), and handles a job created after the
outage. Pods are moved by the stand-in kubelet (see conftest)."""

from __future__ import annotations

import time

import pytest

from bench.harness.observer import Observer
from tests.faults.fault_helpers import (
    admin_api,
    condition_true,
    create_namespace,
    create_tfjobs,
    drive_to_success,
    list_tfjobs,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(900)]

PS, WORKERS = 1, 3
OUTAGE_S = 10.0


@pytest.mark.parametrize(
    "jobs",
    [pytest.param(10, id="10-jobs"), pytest.param(100, id="100-jobs", marks=pytest.mark.slow)],
)
def test_operator_survives_apiserver_outage(fault_plane, start_operator, jobs: int) -> None:
    api = admin_api(fault_plane)
    timeout = 120 + jobs * 2.0
    operator = start_operator()
    create_namespace(api, "outage")
    observer = Observer(api, "outage").start()
    names = create_tfjobs(api, "outage", jobs, PS, WORKERS)
    wait(
        lambda: len(observer.records()) > 0, "the first pod or service", timeout=timeout, every=0.5
    )

    fault_plane.stop_apiserver()
    stopped = time.monotonic()
    time.sleep(OUTAGE_S)  # the fault itself, not a timing assertion
    assert operator.alive(), f"operator exited during the outage:\n{operator.log_tail()}"
    fault_plane.start_apiserver()
    outage = time.monotonic() - stopped

    assert observer.wait_for(dict.fromkeys(names, PS + WORKERS), timeout), (
        f"not every pod and service appeared after the outage: {observer.counts()}"
    )
    # a job made after the outage proves the TFJob watch is back, not only retries
    create_namespace(api, "after")
    after = Observer(api, "after").start()
    after_names = create_tfjobs(api, "after", 1, PS, WORKERS)
    assert after.wait_for(dict.fromkeys(after_names, PS + WORKERS), timeout), (
        f"a TFJob created after the outage got no pods/services:\n{operator.log_tail()}"
    )
    drive_to_success(api, "outage", names, timeout)
    after.stop()
    observer.stop()

    jobs_now = list_tfjobs(api, "outage")
    assert all(condition_true(jobs_now[n], "Succeeded") for n in names)
    assert observer.recreated() == [], "objects made twice"
    assert operator.alive(), f"operator exited:\n{operator.log_tail()}"
    assert operator.proc.returncode is None and outage >= OUTAGE_S
    assert "Traceback" not in operator.log.read_text(errors="replace"), operator.log_tail(60)
