"""TensorFlow specifics of a TFJob: the cluster spec (TF_CONFIG and classic env vars) and the
rules the planner asks (master role, running, success).

See `taas_operator.tfjob.cluster_spec` and `taas_operator.tfjob.rules` for the interfaces.
"""

from taas_operator.tfjob.cluster_spec import (
    ClusterEnv,
    HostFn,
    classic_env,
    cluster_env,
    cluster_spec,
    is_distributed,
    replica_name,
    replica_port,
    service_hosts,
    tf_config,
)
from taas_operator.tfjob.rules import (
    chief_slot,
    failure_fails_job,
    has_succeeded,
    is_master_role,
    is_running,
)

__all__ = [
    "ClusterEnv",
    "HostFn",
    "chief_slot",
    "classic_env",
    "cluster_env",
    "cluster_spec",
    "failure_fails_job",
    "has_succeeded",
    "is_distributed",
    "is_master_role",
    "is_running",
    "replica_name",
    "replica_port",
    "service_hosts",
    "tf_config",
]
