"""The NetworkPolicy over a TFJob's TensorBoard pods.

desired_tensorboard_policy(job, allow_from) -> NetworkPolicy `<job>-tensorboard`
"""

from __future__ import annotations

from typing import Any

from taas_operator.api.constants import TENSORBOARD_PORT
from taas_operator.api.models import TFJob
from taas_operator.tensorboard.objects import (
    owner_references,
    tensorboard_labels,
    tensorboard_name,
)


def desired_tensorboard_policy(job: TFJob, allow_from: list[str]) -> dict[str, Any]:
    """NetworkPolicy `<job>-tensorboard` over the TensorBoard's pods: TensorBoard has no
    authentication, and what must reach it is the apiserver's service proxy (`taas tensorboard`)
    and the kubelet's probe, not pods. So no pod of any namespace is admitted; `allow_from`
    (CIDRs: an apiserver on another node than the TensorBoard's) is admitted to its port. The
    node's own traffic (the kubelet, an apiserver on that node) passes in common policy
    implementations (kube-router, Calico, Cilium)."""
    labels = tensorboard_labels(job)
    ingress = (
        [
            {
                "from": [{"ipBlock": {"cidr": cidr}} for cidr in allow_from],
                "ports": [{"protocol": "TCP", "port": TENSORBOARD_PORT}],
            }
        ]
        if allow_from
        else []
    )
    meta: dict[str, Any] = {
        "name": tensorboard_name(job.name),
        "namespace": job.namespace,
        "labels": labels,
    }
    if job.metadata.uid:
        meta["ownerReferences"] = owner_references(job)
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": meta,
        "spec": {"podSelector": {"matchLabels": labels}, "policyTypes": ["Ingress"],
                 "ingress": ingress},
    }  # fmt: skip
