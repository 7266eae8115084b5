"""SIGKILL the TaaS operator in the middle of workload (b), start it again: no pod or service is
duplicated or made twice, and every job ends exactly as it does without the kill.

The reference run and the killed run use the same control plane (two namespaces, same job
names). Both are then driven to the end by the stand-in kubelet (pods Running, worker 0 exits 0:
see conftest; the only faked part), so the comparison covers status, counts and cleanup, not
only creation.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from bench.harness.observer import Observer
from tests.faults.fault_helpers import (
    admin_api,
    create_namespace,
    create_tfjobs,
    drive_to_success,
    job_states,
)

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(900)]

PS, WORKERS = 1, 3
KILL_AT = 0.2  # share of the pods and services that exist when the operator is killed


def _workload(api, namespace: str, jobs: int, timeout: float, fault: Callable[[Observer], None]):
    """Create the jobs, run `fault` while they are being made, wait for every object, drive the
    jobs to success; return the observer and what it saw deleted before the end."""
    create_namespace(api, namespace)
    observer = Observer(api, namespace).start()
    names = create_tfjobs(api, namespace, jobs, PS, WORKERS)
    fault(observer)
    assert observer.wait_for(dict.fromkeys(names, PS + WORKERS), timeout), (
        f"not every pod and service appeared in {timeout:.0f}s: {observer.counts()}"
    )
    deleted_before_end = observer.deleted()
    drive_to_success(api, namespace, names, timeout)
    observer.stop()
    return observer, deleted_before_end


@pytest.mark.parametrize(
    "jobs",
    [pytest.param(20, id="20-jobs"), pytest.param(200, id="200-jobs", marks=pytest.mark.slow)],
)
def test_sigkill_mid_creation_leaves_no_duplicates_and_same_end_state(
    fault_plane, start_operator, jobs: int
) -> None:
    api = admin_api(fault_plane)
    timeout = 120 + jobs * 2.0
    operators = [start_operator()]
    total = 2 * jobs * (PS + WORKERS)
    seen_at_kill: list[int] = []

    def kill_and_restart(observer: Observer) -> None:
        deadline = time.monotonic() + timeout
        while len(observer.records()) < KILL_AT * total:
            assert time.monotonic() < deadline, "the operator created nothing before the kill"
            time.sleep(0.02)
        operators[-1].kill()
        seen_at_kill.append(len(observer.records()))
        operators.append(start_operator())

    _workload(api, "reference", jobs, timeout, lambda _: None)
    reference = job_states(api, "reference")
    observer, deleted_before_end = _workload(api, "killed", jobs, timeout, kill_and_restart)

    assert seen_at_kill[0] < total, f"the kill came after all {total} objects existed"
    assert observer.recreated() == [], "objects deleted and made again after the restart"
    assert deleted_before_end == [], "objects deleted before the jobs ended"
    killed = job_states(api, "killed")
    assert sorted(killed) == sorted(reference)
    different = {n: (reference[n], killed[n]) for n in reference if reference[n] != killed[n]}
    assert different == {}, f"end states differ (reference, killed): {different}"
    assert operators[-1].alive(), f"restarted operator died:\n{operators[-1].log_tail()}"
