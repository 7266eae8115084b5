"""Katib (hyperparameter search) built from its Go module and run against a cluster:
PostgreSQL, db-manager (behind TaaS's gate) and katib-controller on the host, the goptuna
suggestion and the file metrics collector in pods (docs/hyperparameter-search.md).

    KatibStack(plane, directory, network, load_image, KatibOptions(...))   (stack.py)
    config.*       Katib's own CRDs, RBAC, webhooks and the KatibConfig, from its source
    host_processes.* how PostgreSQL, db-manager and the controller run on this machine
    gate.*         the gate in front of db-manager: the host may ask all, a trial's pod only to
                   report its own trial's observation logs (`python -m` ...katib.gate)
"""

from taas_controlplane.cluster.katib.host_processes import KatibError
from taas_controlplane.cluster.katib.stack import KatibOptions, KatibStack

__all__ = ["KatibError", "KatibOptions", "KatibStack"]
