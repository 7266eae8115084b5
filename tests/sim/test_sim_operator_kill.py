"""(h) The TaaS operator SIGKILLed while 10 TFJobs x 20 replicas are being created on the
simulated cluster: the operator started next converges (every job Succeeded), and no pod or
service is made twice (none seen with two uids, none more than the job's replicas).
"""

from __future__ import annotations

import time
import uuid

import pytest

from bench.harness.observer import Observer
from taas_controlplane.sim.annotations import container_plan
from tests.harness.waiting import wait
from tests.sim.sim_helpers import (
    condition,
    create_namespace,
    create_tfjobs,
    sim_tfjob,
    tfjobs,
)

pytestmark = [pytest.mark.sim, pytest.mark.controlplane, pytest.mark.timeout(600)]

JOBS, PS, WORKERS = 10, 2, 18
KILL_AT = 0.3  # share of the pods and services that exist when the operator is killed


def test_h_sigkill_mid_creation_converges_without_duplicates(sim, operator) -> None:
    ns = f"sim-h-{uuid.uuid4().hex[:6]}"
    create_namespace(sim.api, ns)
    names = [f"job-{i:02d}" for i in range(JOBS)]
    total = 2 * JOBS * (PS + WORKERS)  # pods and services
    plan = container_plan(exit_code=0, run_seconds=10)
    observer = Observer(sim.api, ns).start()
    try:
        create_tfjobs(sim.api, ns, [sim_tfjob(n, PS, WORKERS, plan) for n in names])
        deadline = time.monotonic() + 120
        while len(observer.records()) < KILL_AT * total:
            assert time.monotonic() < deadline, "the operator made nothing before the kill"
            time.sleep(0.02)
        operator.current.kill()
        seen_at_kill = len(observer.records())
        operator.start()
        assert seen_at_kill < total, f"the kill came after all {total} objects existed"
        wait(
            lambda: all(condition(j, "Succeeded") for j in tfjobs(sim.api, ns).values()),
            "every job Succeeded after the restart",
            timeout=300,
            every=1.0,
        )
        assert observer.recreated() == [], "objects deleted and made again after the restart"
        counts = observer.counts()
        assert counts == {n: {"pod": PS + WORKERS, "service": PS + WORKERS} for n in names}
        for name, job in tfjobs(sim.api, ns).items():
            assert job["status"]["replicaStatuses"]["Worker"]["succeeded"] == WORKERS, name
            assert not job["status"].get("recreations"), name
        assert operator.current.alive(), operator.current.log_tail()
        print(f"\n(h) killed at {seen_at_kill}/{total} objects; converged, no duplicates")
    finally:
        observer.stop()
