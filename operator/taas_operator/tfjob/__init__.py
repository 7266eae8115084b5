"""TensorFlow specifics of a TFJob: the cluster spec (TF_CONFIG and classic env vars).

See `taas_operator.tfjob.cluster_spec` for the interface.
"""

from taas_operator.tfjob.cluster_spec import (
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

__all__ = [
    "HostFn",
    "classic_env",
    "cluster_env",
    "cluster_spec",
    "is_distributed",
    "replica_name",
    "replica_port",
    "service_hosts",
    "tf_config",
]
