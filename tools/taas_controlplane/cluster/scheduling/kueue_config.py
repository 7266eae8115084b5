"""Kueue's CRDs, webhook configurations, RBAC and manager configuration, from its own module.

    source = kueue_source()                          # sigs.k8s.io/kueue@KUEUE_VERSION's tree
    crds(source, webhook) -> list[dict]              # config/components/crd + its patches
    webhook_configurations(source, webhook) -> list  # config/components/webhook
    rbac(source, user) -> list[dict]                 # manager + metrics-auth roles, bound to user
    manager_config(source, ports, cert_dir, frameworks, pods_ready_timeout) -> dict

Pure apart from reading the module's files. What a cluster gets is what `kubectl apply -k
config/default` of the same release gives it, with three differences made here because Kueue
runs as a process on this machine rather than as a pod behind a Service: every webhook's
`clientConfig.service` becomes `url: https://127.0.0.1:<port><path>` with the `caBundle` of the
control plane's CA (the conversion webhooks of the CRDs too); the manager's own certificates
are made by this project (`internalCertManagement.enable: false`, `webhook.certDir`); and it
serves only on 127.0.0.1 (webhook, health, metrics), without leader election and without the
visibility API server (`VisibilityOnDemand: false`: an extension apiserver of its own, not
needed to queue and admit). Names get the release's `kueue-` prefix.

`waitForPodsReady`: v0.19's `config.kueue.x-k8s.io/v1beta2` has no `enable` field; Kueue's
defaulting turns it on for every configuration (timeout 30m, the same recovery timeout,
requeued with a 60 s backoff doubling), off only with its deprecated `DisableWaitForPodsReady`
feature gate. The module's file leaves it commented out, so Kueue's defaults hold unless the
caller gives a timeout (`pods_ready_timeout`), which becomes `waitForPodsReady.timeout`.

Integrations: the module's default list (v0.19: batch/job, pod, deployment, statefulset, ...)
plus `kubeflow.org/tfjob`, which v0.19 no longer enables by default (kueue#12606), unless the
caller asks for the plain-pod way only (`frameworks`).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from taas_controlplane.build.binaries import KUEUE_VERSION, module_source
from taas_controlplane.cluster.scheduling.kustomize import (
    KustomizeError,
    apply_replacements,
    load_documents,
    merge_patch,
)

KUEUE_MODULE = "sigs.k8s.io/kueue"
NAME_PREFIX = "kueue-"
NAMESPACE = "kueue-system"
TFJOB_FRAMEWORK = "kubeflow.org/tfjob"
POD_FRAMEWORK = "pod"
#: The webhook configurations' names, as `config/default` (namePrefix) makes them.
MUTATING = NAME_PREFIX + "mutating-webhook-configuration"
VALIDATING = NAME_PREFIX + "validating-webhook-configuration"
_COMPONENTS = Path("config") / "components"


class WebhookEndpoint(BaseModel):
    """Where the apiserver reaches Kueue's webhook server, and the CA that signed its cert."""

    base_url: str  # https://127.0.0.1:<port>
    ca_pem: bytes

    def client_config(self, path: str) -> dict[str, Any]:
        return {
            "url": self.base_url + path,
            "caBundle": base64.b64encode(self.ca_pem).decode(),
        }


class ManagerPorts(BaseModel):
    """Kueue's listeners, all on 127.0.0.1."""

    webhook: int
    health: int
    metrics: int


def kueue_source() -> Path:
    """The extracted source of Kueue's module (downloaded into the Go module cache once)."""
    return module_source(KUEUE_MODULE, KUEUE_VERSION)


def _kustomization(directory: Path) -> dict[str, Any]:
    return dict(yaml.safe_load((directory / "kustomization.yaml").read_text()))


def _point_at(webhook: dict[str, Any], endpoint: WebhookEndpoint) -> None:
    service = webhook["clientConfig"].get("service")
    if service is None:
        raise KustomizeError(f"webhook {webhook.get('name')!r} has no clientConfig.service")
    webhook["clientConfig"] = endpoint.client_config(service.get("path", "/"))


def crds(source: Path, endpoint: WebhookEndpoint) -> list[dict[str, Any]]:
    """Kueue's CRDs, with the conversion webhooks its kustomization patches in."""
    directory = source / _COMPONENTS / "crd"
    kustomization = _kustomization(directory)
    objects = [
        doc for path in kustomization["resources"] for doc in load_documents(directory / path)
    ]
    for patch in kustomization.get("patches") or []:
        if set(patch) != {"path"}:
            raise KustomizeError(f"crd patch {patch} is not a plain `path:` patch")
        for document in load_documents(directory / patch["path"]):
            merge_patch(objects, document)
    for crd in objects:
        conversion = crd["spec"].get("conversion") or {}
        if conversion.get("strategy") == "Webhook":
            _point_at(conversion["webhook"], endpoint)
    return objects


def webhook_configurations(source: Path, endpoint: WebhookEndpoint) -> list[dict[str, Any]]:
    """The mutating and validating webhook configurations (namespace selectors as shipped)."""
    directory = source / _COMPONENTS / "webhook"
    kustomization = _kustomization(directory)
    objects = [
        doc
        for path in kustomization["resources"]
        for doc in load_documents(directory / path)
        if doc["kind"].endswith("WebhookConfiguration")
    ]
    for patch in kustomization.get("patches") or []:
        if set(patch) != {"patch"}:
            raise KustomizeError(f"webhook patch {patch} is not an inline `patch:`")
        merge_patch(objects, yaml.safe_load(patch["patch"]))
    apply_replacements(objects, kustomization.get("replacements") or [])
    for configuration in objects:
        configuration["metadata"]["name"] = NAME_PREFIX + configuration["metadata"]["name"]
        for webhook in configuration["webhooks"]:
            _point_at(webhook, endpoint)
    names = sorted(c["metadata"]["name"] for c in objects)
    if names != sorted([MUTATING, VALIDATING]):
        raise KustomizeError(f"expected Kueue's two webhook configurations, found {names}")
    return objects


def _binding(role: dict[str, Any], user: str) -> dict[str, Any]:
    namespaced = role["kind"] == "Role"
    binding: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding" if namespaced else "ClusterRoleBinding",
        "metadata": {"name": role["metadata"]["name"]},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role["kind"],
            "name": role["metadata"]["name"],
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
    if namespaced:
        binding["metadata"]["namespace"] = NAMESPACE
    return binding


def rbac(source: Path, user: str) -> list[dict[str, Any]]:
    """Kueue's namespace, the manager's ClusterRole, its Role on Secrets in its namespace (its
    caches watch them; nothing is stored there with internal certificates off) and the metrics
    endpoint's ClusterRole (token and access reviews), each bound to `user` (the client
    certificate Kueue runs with) as `config/components/rbac` binds them to its ServiceAccount.
    The role's webhook-configuration names get the same prefix."""
    directory = source / _COMPONENTS / "rbac"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    objects: list[dict[str, Any]] = [namespace]
    for path in ("role.yaml", "manager_secrets_role.yaml", "metrics_auth_role.yaml"):
        for role in load_documents(directory / path):
            role["metadata"]["name"] = NAME_PREFIX + role["metadata"]["name"]
            if role["kind"] == "Role":
                role["metadata"]["namespace"] = NAMESPACE
            for rule in role.get("rules") or []:
                if "resourceNames" in rule and "admissionregistration.k8s.io" in rule.get(
                    "apiGroups", []
                ):
                    rule["resourceNames"] = [NAME_PREFIX + n for n in rule["resourceNames"]]
            objects += [role, _binding(role, user)]
    return objects


def frameworks(source: Path, tfjob: bool = True) -> list[str]:
    """The module's default integrations, plus (`tfjob`) or minus Kubeflow's TFJob one."""
    config = yaml.safe_load(
        (source / _COMPONENTS / "manager" / "controller_manager_config.yaml").read_text()
    )
    found = [f for f in config["integrations"]["frameworks"] if f != TFJOB_FRAMEWORK]
    if POD_FRAMEWORK not in found:
        raise KustomizeError(f"Kueue {KUEUE_VERSION}'s default integrations lack `pod`")
    return [*found, TFJOB_FRAMEWORK] if tfjob else found


def manager_config(
    source: Path,
    ports: ManagerPorts,
    cert_dir: Path,
    enabled: list[str],
    pods_ready_timeout: float | None = None,
) -> dict[str, Any]:
    """The module's `controller_manager_config.yaml`, changed only where this machine needs it
    (see the module docstring), with `waitForPodsReady.timeout` set if `pods_ready_timeout`
    (seconds) is given."""
    path = source / _COMPONENTS / "manager" / "controller_manager_config.yaml"
    config: dict[str, Any] = yaml.safe_load(path.read_text())
    config["namespace"] = NAMESPACE
    config["health"] = {"healthProbeBindAddress": f"127.0.0.1:{ports.health}"}
    config["metrics"] = {"bindAddress": f"127.0.0.1:{ports.metrics}"}
    config["webhook"] = {"host": "127.0.0.1", "port": ports.webhook, "certDir": str(cert_dir)}
    config["leaderElection"] = {"leaderElect": False}
    config["internalCertManagement"] = {"enable": False}
    config["integrations"]["frameworks"] = list(enabled)
    config["featureGates"] = {"VisibilityOnDemand": False}
    if pods_ready_timeout is not None:
        config["waitForPodsReady"] = {"timeout": f"{pods_ready_timeout:g}s"}
    return config
