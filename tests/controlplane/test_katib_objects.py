"""Katib's objects as taas_controlplane.cluster.katib makes them, accepted by a real kube-apiserver:
its CRDs from its own module, its ClusterRole bound to the controller's user, and its webhook
configurations rewritten to call the host (dry run: nothing serves them here)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from taas_controlplane.cluster.katib import config
from taas_controlplane.cluster.katib.stack import CONTROLLER_USER, IMAGES
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane

pytestmark = [pytest.mark.controlplane]


def _apply(plane: ControlPlane, objects: list[dict], *flags: str) -> str:
    document = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    done = plane.kubectl("apply", "--server-side", *flags, "-f", "-", input=document, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_katibs_crds_rbac_and_webhooks_are_accepted(control_plane: ControlPlane) -> None:
    source = config.katib_source()
    for crd in config.crd_files(source):
        control_plane.kubectl("apply", "--server-side", "-f", str(crd))
    names = config.crd_names(source)
    assert sorted(names) == [
        "experiments.kubeflow.org", "suggestions.kubeflow.org", "trials.kubeflow.org",
    ]  # fmt: skip
    for name in names:
        control_plane.kubectl("wait", "--for=condition=Established", f"crd/{name}")
    _apply(control_plane, config.rbac(source, CONTROLLER_USER))
    allowed = control_plane.kubectl(
        "auth", "can-i", "create", "deployments", "--as", CONTROLLER_USER, check=False
    )
    assert allowed.stdout.strip() == "yes"  # the suggestion's Deployment

    ca = base64.b64encode(Path(control_plane.ca_file).read_bytes()).decode()
    endpoint = config.WebhookEndpoint(base_url="https://127.0.0.1:9443", ca_bundle_b64=ca)
    webhooks = config.webhook_configurations(source, endpoint, CONTROLLER_USER)
    out = _apply(control_plane, webhooks, "--dry-run=server")
    assert out.count("serverside-applied (server dry run)") == 2, out
    hooks = {h["name"]: h for w in webhooks for h in w["webhooks"]}
    assert set(hooks) == {
        "validator.experiment.katib.kubeflow.org",
        "defaulter.experiment.katib.kubeflow.org",
        "mutator.pod.katib.kubeflow.org",
    }
    pod = hooks["mutator.pod.katib.kubeflow.org"]
    assert pod["clientConfig"] == {"url": "https://127.0.0.1:9443/mutate-pod", "caBundle": ca}
    assert pod["namespaceSelector"] == {"matchLabels": {config.INJECTION_LABEL: "enabled"}}
    assert CONTROLLER_USER in pod["matchConditions"][0]["expression"]


def test_the_katib_config_names_tfjob_trials_and_the_images_built_here() -> None:
    ports = config.ControllerPorts(webhook=1, metrics=2, health=3)
    document = config.katib_config(ports, IMAGES)
    controller = document["init"]["controller"]
    assert "TFJob.v1.kubeflow.org" in controller["trialResources"]
    assert controller["healthzAddr"] == "127.0.0.1:3"
    assert document["init"]["certGenerator"] == {"enable": False}
    suggestions = {s["algorithmName"]: s["image"] for s in document["runtime"]["suggestions"]}
    assert suggestions["random"] == suggestions["tpe"] == IMAGES.suggestion_goptuna
    collectors = {c["kind"]: c["image"] for c in document["runtime"]["metricsCollectors"]}
    assert collectors == {
        "StdOut": IMAGES.file_metrics_collector,
        "File": IMAGES.file_metrics_collector,
    }
