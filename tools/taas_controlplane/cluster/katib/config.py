"""Katib's own objects, read from its Go module's source and set for a controller on the host.

    source = katib_source()
    crd_files(source)                          # experiments, suggestions, trials
    rbac(source, user)                         # its ClusterRole, bound to the controller's user
    webhook_configurations(source, endpoint, user)   # its webhooks, at the host's address
    katib_config(ports, images)                # the KatibConfig document (file and ConfigMap)

Everything comes from `manifests/v1beta1/components/` of github.com/kubeflow/katib at the version
the binaries are built from, changed only where the controller runs differently: the webhooks
call a URL on 127.0.0.1 (the controller is a host process, not the `katib-controller` Service)
with the cluster's CA as their bundle, and the pod webhook's matchCondition excludes the
controller's own user rather than its ServiceAccount.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from taas_controlplane.build.binaries import KATIB_VERSION, module_source

KATIB_MODULE = "github.com/kubeflow/katib"
#: Where katib-controller reads the ConfigMap `katib-config` (its KATIB_CORE_NAMESPACE default).
KATIB_NAMESPACE = "kubeflow"
CONFIG_MAP = "katib-config"
#: The label a namespace needs for Katib's pod webhook to inject the metrics collector.
INJECTION_LABEL = "katib.kubeflow.org/metrics-collector-injection"
#: The kinds Katib may create as trials: TaaS's TFJob, and Kubernetes' Job.
TRIAL_RESOURCES = ["TFJob.v1.kubeflow.org", "Job.v1.batch"]
#: The algorithms the Go suggestion service (goptuna) serves.
GOPTUNA_ALGORITHMS = ["random", "tpe", "cmaes", "sobol"]
#: The collectors the Go file-metricscollector serves (TensorFlowEvent's is Python + TensorFlow).
FILE_COLLECTOR_KINDS = ["StdOut", "File"]


class KatibImages(BaseModel):
    """The images of Katib's parts that run in pods."""

    suggestion_goptuna: str
    file_metrics_collector: str


class ControllerPorts(BaseModel):
    """katib-controller's ports on the host."""

    webhook: int
    metrics: int
    health: int


class WebhookEndpoint(BaseModel):
    """Where the apiserver reaches katib-controller's webhook server, and the CA it trusts."""

    base_url: str
    ca_bundle_b64: str


def katib_source() -> Path:
    """Katib's module source (read-only), from the Go module cache."""
    return module_source(KATIB_MODULE, KATIB_VERSION)


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def crd_files(source: Path) -> list[Path]:
    """Katib's CRDs: experiments, suggestions, trials (kubeflow.org/v1beta1)."""
    directory = source / "manifests" / "v1beta1" / "components" / "crd"
    return [directory / f"{name}.yaml" for name in ("experiment", "suggestion", "trial")]


def crd_names(source: Path) -> list[str]:
    return [_documents(path)[0]["metadata"]["name"] for path in crd_files(source)]


def rbac(source: Path, user: str) -> list[dict[str, Any]]:
    """Katib's `katib-controller` ClusterRole, bound to `user` (the controller's kubeconfig)."""
    rules = source / "manifests" / "v1beta1" / "components" / "controller" / "rbac.yaml"
    role = next(
        d
        for d in _documents(rules)
        if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "katib-controller"
    )
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "katib-controller"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "katib-controller",
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
    return [role, binding]


def gate_rbac(user: str) -> list[dict[str, Any]]:
    """What db-manager's gate (gate.py) may read: pods (by address) and Katib's Trials."""
    name = "taas-katib-db-gate"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            {"apiGroups": ["kubeflow.org"], "resources": ["trials"], "verbs": ["get"]},
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
    return [role, binding]


def webhook_configurations(
    source: Path, endpoint: WebhookEndpoint, user: str
) -> list[dict[str, Any]]:
    """Katib's validating and mutating webhook configurations, calling `endpoint`."""
    path = source / "manifests" / "v1beta1" / "components" / "webhook" / "webhooks.yaml"
    configurations = copy.deepcopy(_documents(path))
    for configuration in configurations:
        for hook in configuration["webhooks"]:
            service = hook["clientConfig"].pop("service")
            hook["clientConfig"] = {
                "url": endpoint.base_url + service["path"],
                "caBundle": endpoint.ca_bundle_b64,
            }
            for condition in hook.get("matchConditions") or []:
                if "request.userInfo.username" in condition["expression"]:
                    condition["expression"] = f'request.userInfo.username != "{user}"'
    return configurations


#: Katib asks 500Mi of ephemeral storage for its suggestion and collector containers unless told
#: "-1" (none); the node's kubelet runs without local storage isolation and so offers none.
_NO_EPHEMERAL_STORAGE = {
    "requests": {"ephemeral-storage": "-1"},
    "limits": {"ephemeral-storage": "-1"},
}


def katib_config(ports: ControllerPorts, images: KatibImages) -> dict[str, Any]:
    """The KatibConfig: the controller's ports, TFJob trials, the Go suggestion and collector."""
    pull = "IfNotPresent"
    return {
        "apiVersion": "config.kubeflow.org/v1beta1",
        "kind": "KatibConfig",
        "init": {
            "certGenerator": {"enable": False},  # the cluster's CA issues the certificate
            "controller": {
                "webhookPort": ports.webhook,
                "metricsAddr": f"127.0.0.1:{ports.metrics}",
                "healthzAddr": f"127.0.0.1:{ports.health}",
                "trialResources": TRIAL_RESOURCES,
            },
        },
        "runtime": {
            "metricsCollectors": [
                {
                    "kind": kind,
                    "image": images.file_metrics_collector,
                    "imagePullPolicy": pull,
                    "resources": _NO_EPHEMERAL_STORAGE,
                }
                for kind in FILE_COLLECTOR_KINDS
            ],
            "suggestions": [
                {
                    "algorithmName": name,
                    "image": images.suggestion_goptuna,
                    "imagePullPolicy": pull,
                    "resources": _NO_EPHEMERAL_STORAGE,
                }
                for name in GOPTUNA_ALGORITHMS
            ],
        },
    }


def config_map(config: dict[str, Any]) -> dict[str, Any]:
    """The ConfigMap katib-controller reads its runtime settings from."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP, "namespace": KATIB_NAMESPACE},
        "data": {"katib-config.yaml": yaml.safe_dump(config)},
    }
