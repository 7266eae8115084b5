"""Issue 23, item 4 at CI size: gang jobs over GPU quotas on the simulated cluster, with Kueue
(its `kubeflow.org/tfjob` integration) admitting each job whole within its queue's quota and
scheduler-plugins' coscheduling placing each whole, TaaS's operator running them unchanged
(`--gang-scheduler-name=scheduler-plugins`). The scenario and its checks are
bench/scheduling/scenario.py (`GangShape.quick()`: 12 jobs of 8-16 one-GPU workers over 10
nodes of 8 GPUs, 2 queues of 32 GPUs, so jobs queue for about three rounds); the full size is
`python -m bench.scheduling`.

Real: etcd, kube-apiserver, kube-scheduler, kube-controller-manager, scheduler-plugins'
scheduler and controller, Kueue, the operator. Simulated: the kubelets (kwok) and the GPUs
(no GPU exists here: the nodes advertise `nvidia.com/gpu` and kwok runs the fake containers).
Its own simulated cluster (the session's has no schedulers of gang jobs).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.controllers import CONTROLLERS
from bench.scheduling.scenario import GangRun
from bench.scheduling.shape import GangShape
from taas_controlplane.sim.cluster import SIM_BINARIES
from tests.builds import SCHEDULERS

pytestmark = [
    pytest.mark.sim,
    pytest.mark.controlplane,
    pytest.mark.builds(*SIM_BINARIES, *SCHEDULERS),
    pytest.mark.timeout(420),
]


def test_gang_jobs_over_gpu_quotas_never_deadlock_nor_exceed_a_quota(tmp_path: Path) -> None:
    shape = GangShape.quick()
    with GangRun(shape, tmp_path, CONTROLLERS["taas"]) as run:
        result = run.run()
    assert not result.problems, "\n".join(result.problems)
    assert len(result.jobs) == shape.jobs
    # The quotas were the limit: some jobs waited for admission, and the queues were full.
    assert max(j.admit_s for j in result.jobs) > shape.run_seconds
    assert all(peak > shape.quota // 2 for peak in result.peak_held.values()), result.peak_held
