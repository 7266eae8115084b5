"""The control plane the other tests stand on: real kube-apiserver + etcd, RBAC, two at once."""

from __future__ import annotations

import json
import os
import time

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane

pytestmark = pytest.mark.controlplane

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.taas.dev}
spec:
  group: example.taas.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer, minimum: 1}}}
"""


def test_kubectl_version_reports_the_built_server(control_plane: ControlPlane) -> None:
    out = control_plane.kubectl("version", "-o", "json").stdout
    server = json.loads(out)["serverVersion"]
    assert server["gitVersion"] == control_plane.version
    assert (server["major"], server["minor"]) == tuple(control_plane.version[1:].split(".")[:2])


def test_kubectl_get_namespaces(control_plane: ControlPlane) -> None:
    names = control_plane.kubectl("get", "ns", "-o", "name").stdout.split()
    assert "namespace/default" in names and "namespace/kube-system" in names


def test_crd_becomes_established_and_serves_objects(
    control_plane: ControlPlane, namespace: str
) -> None:
    control_plane.kubectl("apply", "-f", "-", input=CRD)
    control_plane.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/widgets.example.taas.dev",
    )
    widget = "apiVersion: example.taas.dev/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}"
    control_plane.kubectl("apply", "-n", namespace, "-f", "-", input=widget)
    got = json.loads(
        control_plane.kubectl("get", "widget", "w1", "-n", namespace, "-o", "json").stdout
    )
    assert got["spec"] == {"size": 3}
    bad = widget.replace("size: 3", "size: 0")
    refused = control_plane.kubectl("apply", "-n", namespace, "-f", "-", input=bad, check=False)
    assert refused.returncode != 0 and "spec.size" in refused.stderr


def test_service_account_identity_gets_only_what_rbac_grants(
    control_plane: ControlPlane, namespace: str
) -> None:
    user = f"system:serviceaccount:{namespace}:reader"
    as_sa = control_plane.kubeconfig_for(
        user, ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    )
    denied = control_plane.kubectl("get", "pods", "-n", namespace, kubeconfig=as_sa, check=False)
    assert denied.returncode != 0
    assert (
        "Forbidden" in denied.stderr
        and "403"
        in control_plane.kubectl(
            "get", "pods", "-n", namespace, "-v=6", kubeconfig=as_sa, check=False
        ).stderr
    )
    control_plane.kubectl(
        "create", "role", "pod-reader", "-n", namespace, "--verb=get,list", "--resource=pods"
    )
    control_plane.kubectl(
        "create",
        "rolebinding",
        "reader",
        "-n",
        namespace,
        "--role=pod-reader",
        f"--serviceaccount={namespace}:reader",
    )
    allowed = None
    for _ in range(40):  # the RBAC authorizer's cache takes a moment to see the binding
        allowed = control_plane.kubectl(
            "get", "pods", "-n", namespace, kubeconfig=as_sa, check=False
        )
        if allowed.returncode == 0:
            break
        time.sleep(0.25)
    assert allowed is not None and allowed.returncode == 0, allowed.stderr
    still_denied = control_plane.kubectl(
        "get", "secrets", "-n", namespace, kubeconfig=as_sa, check=False
    )
    assert still_denied.returncode != 0 and "Forbidden" in still_denied.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is not running
        return stat.read().split(")")[-1].split()[0] != "Z"


def test_two_control_planes_at_once_and_stop_leaves_nothing(
    control_plane: ControlPlane,
) -> None:
    second = ControlPlane().start()
    try:
        assert second.endpoints != control_plane.endpoints
        assert second.server != control_plane.server
        second.kubectl("create", "namespace", "only-in-second")
        first_names = control_plane.kubectl("get", "ns", "-o", "name").stdout.split()
        assert "namespace/only-in-second" not in first_names
        pids = second.pids()
        assert len(pids) == 2 and all(_alive(p) for p in pids)
    finally:
        second.stop()
    assert not any(_alive(p) for p in pids)
    assert not os.path.exists(second.directory)
    assert control_plane.kubectl("get", "ns").returncode == 0
