"""The generic job engine: desired objects and the lifecycle, both pure (no I/O).

Public surface:
    reconcile(job, pods, now, *, services=None, options=None) -> Plan     (lifecycle.py)
    status_changed(old, new) -> bool
    Plan, Event, ObservedPod (ObservedPod.from_manifest(pod_dict))
    BuildOptions(cluster_domain="", hosts=None), BuildOptions.from_settings(settings)
    desired_pod(s), desired_service(s), desired_network_policy, owner_reference,
    replica_labels, job_selector                                           (objects.py)
    set_condition                                                          (conditions.py)
"""

from taas_operator.engine.conditions import set_condition
from taas_operator.engine.lifecycle import Event, Plan, reconcile, status_changed
from taas_operator.engine.objects import (
    BuildOptions,
    desired_network_policy,
    desired_pod,
    desired_pods,
    desired_service,
    desired_services,
    job_selector,
    owner_reference,
    replica_labels,
)
from taas_operator.engine.observed import ObservedPod

__all__ = [
    "BuildOptions",
    "Event",
    "ObservedPod",
    "Plan",
    "desired_network_policy",
    "desired_pod",
    "desired_pods",
    "desired_service",
    "desired_services",
    "job_selector",
    "owner_reference",
    "reconcile",
    "replica_labels",
    "set_condition",
    "status_changed",
]
