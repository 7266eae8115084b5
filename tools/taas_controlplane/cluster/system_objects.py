"""The cluster's own API objects: RBAC of CoreDNS and kube-router, and the `kube-dns` Service.

CoreDNS runs on the host (not as a pod: no image registry here) and listens on the bridge
address; `kube-dns` is a ClusterIP Service without a selector whose EndpointSlice points there,
so pods ask the usual ClusterIP and kube-proxy carries the query, as in a kubeadm cluster.
"""

from __future__ import annotations

from typing import Any

from taas_controlplane.node.component_commands import (
    COREDNS_USER,
    KUBE_DNS_OFFSET,
    KUBE_ROUTER_USER,
)
from taas_controlplane.node.host_network import NetworkConfig


def _cluster_role(name: str, user: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    ]


def _read(group: str, *resources: str) -> dict[str, Any]:
    return {"apiGroups": [group], "resources": list(resources), "verbs": ["get", "list", "watch"]}


def manifests(network: NetworkConfig) -> list[dict[str, Any]]:
    """Everything to apply once the API server is up (idempotent with `kubectl apply`)."""
    dns_labels = {"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}
    ports = [
        {"name": "dns", "port": 53, "protocol": "UDP"},
        {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
    ]
    return [
        # The same rules as upstream CoreDNS's `system:coredns` ClusterRole.
        *_cluster_role(
            "system:taas:coredns",
            COREDNS_USER,
            [
                _read("", "endpoints", "services", "pods", "namespaces"),
                _read("discovery.k8s.io", "endpointslices"),
            ],
        ),
        # What kube-router's firewall watches (its example DaemonSet's role, minus routing).
        *_cluster_role(
            "system:taas:kube-router",
            KUBE_ROUTER_USER,
            [
                _read("", "namespaces", "pods", "services", "nodes", "endpoints"),
                _read("networking.k8s.io", "networkpolicies"),
                _read("discovery.k8s.io", "endpointslices"),
            ],
        ),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": dns_labels},
            "spec": {"clusterIP": network.service_ip(KUBE_DNS_OFFSET), "ports": ports},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "kube-dns-host",
                "namespace": "kube-system",
                "labels": {
                    "kubernetes.io/service-name": "kube-dns",
                    "endpointslice.kubernetes.io/managed-by": "taas-controlplane",
                },
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [network.host_address], "conditions": {"ready": True}}],
            "ports": ports,
        },
    ]
