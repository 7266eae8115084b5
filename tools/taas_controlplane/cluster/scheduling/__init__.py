"""The schedulers of gang jobs, built from their Go modules and run against a control plane:
scheduler-plugins' coscheduling (scheduler + controller) and Kueue (queues, quotas, admission).

    SchedulingStack(plane, directory, SchedulingOptions(coscheduling=..., kueue=...))  (stack.py)
    coscheduling.scheduler_config / crd_files / ...   scheduler-plugins' own manifests
    kueue_config.crds / webhook_configurations / rbac / manager_config   Kueue's own config
    kueue_process.KueueFiles / kueue_argv             how Kueue's manager runs on this machine
    kustomize.*                                       the subset of kustomize Kueue's config uses

The bare control plane of the tests, the one-node cluster and the simulated cluster all start
them through `SchedulingStack` (docs/gang-scheduling.md).
"""

from taas_controlplane.cluster.scheduling.stack import (
    SchedulingError,
    SchedulingOptions,
    SchedulingStack,
)

__all__ = ["SchedulingError", "SchedulingOptions", "SchedulingStack"]
