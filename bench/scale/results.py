"""The figures of one contestant on one scenario.

ScaleResult(controller, scenario, pods, ...)      # pydantic: printed and dumped as JSON
percentile(values, q) -> float
"""

from __future__ import annotations

import math

from pydantic import BaseModel

#: SIG Scalability's pod-startup SLO: p99 of (creation -> Running seen by a watch) <= 5 s for
#: stateless pods, image pulls excluded (none here: kwok runs nothing).
POD_STARTUP_SLO_S = 5.0


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..1) of a non-empty list."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


class ScaleResult(BaseModel):
    """Figures of one (scenario, controller) run; None where not measured or not reached."""

    controller: str
    scenario: str
    pods: int
    broken: str | None = None
    #: How long the whole run took, cluster start-up and tear-down included.
    wall_s: float | None = None
    nodes_ready_s: float | None = None

    # (d), (e): the load
    create_s: float | None = None
    #: From the first TFJob POSTed to the last of the scenario's pods seen (the controller's
    #: part), and to the last one bound to a node (the scheduler's).
    all_created_s: float | None = None
    all_bound_s: float | None = None
    all_running_s: float | None = None
    all_done_s: float | None = None
    #: From the harness ending the workers to the last job done.
    finish_s: float | None = None
    #: From all done to every PS pod deleted (cleanPodPolicy Running).
    cleaned_s: float | None = None
    pods_running: int = 0
    jobs_done: int = 0
    pod_start_p50_s: float | None = None
    pod_start_p99_s: float | None = None
    pod_start_max_s: float | None = None
    #: The same start-up by the objects' own stamps (whole seconds): the apiserver's
    #: creationTimestamp -> the kubelet's (kwok's) containers' startedAt.
    pod_start_stamped_p50_s: float | None = None
    pod_start_stamped_p99_s: float | None = None
    #: creation -> bound to a node, p99 (the scheduler's share of the start-up).
    pod_bound_p99_s: float | None = None
    #: bound -> Running, p99 (the simulated kubelets' share).
    pod_bound_to_running_p99_s: float | None = None
    rss_at_running_mib: float | None = None

    # (f): node loss
    lost_replicas: int = 0
    silent_to_not_ready_s: float | None = None
    not_ready_to_evicted_s: float | None = None
    evicted_to_replaced_max_s: float | None = None
    not_ready_to_replaced_s: float | None = None
    not_ready_to_job_running_s: float | None = None
    replaced: int = 0
    duplicates: int | None = None
    stuck: str | None = None

    # the controller, from the creates until it is quiet again
    settle_s: float | None = None
    cpu_s: float | None = None
    idle_rss_mib: float | None = None
    peak_rss_mib: float | None = None
    api_writes_per_pod: float | None = None
    controller_writes_per_pod: float | None = None
    controller_reads_per_pod: float | None = None
    controller_requests: dict[str, float] = {}

    @property
    def cpu_ms_per_pod(self) -> float | None:
        return None if self.cpu_s is None else 1000 * self.cpu_s / self.pods

    @property
    def rss_growth_per_1000_pods_mib(self) -> float | None:
        """RSS with every pod Running minus the idle RSS, per 1,000 pods."""
        if self.rss_at_running_mib is None or self.idle_rss_mib is None:
            return None
        return (self.rss_at_running_mib - self.idle_rss_mib) * 1000 / self.pods

    @property
    def slo_met(self) -> bool | None:
        if self.pod_start_p99_s is None:
            return None
        return self.pod_start_p99_s <= POD_STARTUP_SLO_S
