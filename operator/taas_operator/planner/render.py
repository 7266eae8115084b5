"""What the operator would create for TFJobs, as multi-document YAML (`taas render`).

render_objects(jobs, cluster_domain="", network_policy=True,
               node_lost_toleration_seconds=DEFAULT_NODE_LOST_TOLERATION_SECONDS) -> str

The pods carry the operator's default tolerations of a lost node (`planner.tolerations`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from taas_operator.api import TFJob
from taas_operator.api.constants import DEFAULT_NODE_LOST_TOLERATION_SECONDS
from taas_operator.planner.objects import (
    BuildOptions,
    desired_network_policy,
    desired_pods,
    desired_services,
)


def render_objects(
    jobs: Sequence[TFJob],
    cluster_domain: str = "",
    network_policy: bool = True,
    node_lost_toleration_seconds: int = DEFAULT_NODE_LOST_TOLERATION_SECONDS,
) -> str:
    """Pods, services and (optionally) NetworkPolicies of `jobs`, as multi-document YAML."""
    objects: list[dict[str, Any]] = []
    options = BuildOptions(
        cluster_domain=cluster_domain, node_lost_toleration_seconds=node_lost_toleration_seconds
    )
    for job in jobs:
        objects += desired_pods(job, options)
        objects += desired_services(job)
        if network_policy:
            objects.append(desired_network_policy(job))
    return yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False)
