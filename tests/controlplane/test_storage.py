"""The clusters' storage classes (taas_controlplane.cluster.storage): the provisioner's config as
v0.0.30 reads it, and the provisioner started against a real kube-apiserver, its default class given
to a claim that names none, and nothing left after stop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taas_controlplane.build.busybox_images import TOOLBOX_IMAGE
from taas_controlplane.cluster import storage
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane


def _by_kind(objects: list[dict]) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for obj in objects:
        found.setdefault(obj["kind"], []).append(obj)
    return found


@pytest.mark.fast
def test_one_default_node_local_class_and_one_shared_class_in_one_config(tmp_path: Path) -> None:
    nodes = {"taas-node-0": tmp_path / "n0", "taas-node-1": tmp_path / "n1"}
    kinds = _by_kind(storage.objects(nodes, tmp_path / "shared"))
    classes = {c["metadata"]["name"]: c for c in kinds["StorageClass"]}
    assert set(classes) == {"local-path", "shared-path"}
    default = [
        name
        for name, c in classes.items()
        if c["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    ]
    assert default == ["local-path"]
    assert classes["local-path"]["volumeBindingMode"] == "WaitForFirstConsumer"
    assert {c["provisioner"] for c in classes.values()} == {"rancher.io/local-path"}

    (configmap,) = kinds["ConfigMap"]
    assert configmap["metadata"] == {"name": storage.CONFIGMAP, "namespace": storage.NAMESPACE}
    data = configmap["data"]
    assert set(data) == {"config.json", "setup", "teardown", "helperPod.yaml"}
    # One class config per class (the provisioner refuses a class it has none for), each either
    # node paths or a shared path, never both (it refuses that too).
    config = json.loads(data["config.json"])
    assert set(config) == {"storageClassConfigs"}
    local, shared = (config["storageClassConfigs"][n] for n in ("local-path", "shared-path"))
    assert local == {
        "nodePathMap": [
            {"node": "taas-node-0", "paths": [str(tmp_path / "n0")]},
            {"node": "taas-node-1", "paths": [str(tmp_path / "n1")]},
        ]
    }
    assert shared == {"sharedFileSystemPath": str(tmp_path / "shared")}
    # The helper pods run the image every node has, never pulled.
    (container,) = json.loads(data["helperPod.yaml"])["spec"]["containers"]
    assert container["image"] == TOOLBOX_IMAGE and container["imagePullPolicy"] == "Never"
    assert 'mkdir -m 0777 -p "$VOL_DIR"' in data["setup"]
    assert 'rm -rf "$VOL_DIR"' in data["teardown"]


@pytest.mark.controlplane
@pytest.mark.builds("local-path-provisioner")
@pytest.mark.timeout(300)
def test_the_provisioner_starts_its_class_is_the_default_and_stop_leaves_nothing(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    parts = storage.Storage(control_plane, tmp_path, ["taas-node"])
    try:
        parts.start()
        assert parts.exited() is None
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "model", "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        control_plane.kubectl("apply", "-f", "-", input=json.dumps(claim))
        got = control_plane.kubectl(
            "get", "pvc", "model", "-n", namespace, "-o", "jsonpath={.spec.storageClassName}"
        )
        assert got.stdout == "local-path"
        assert (tmp_path / "storage" / "taas-node").is_dir()
        assert (tmp_path / "storage" / "shared").is_dir()
        proc = parts.procs[parts.NAME]
    finally:
        parts.stop()
        parts.remove()
        control_plane.kubectl(
            "delete", "storageclass", "local-path", "shared-path", "--ignore-not-found",
            check=False,
        )  # fmt: skip
        control_plane.kubectl(
            "delete", "namespace", storage.NAMESPACE, "--wait=false", "--ignore-not-found",
            check=False,
        )  # fmt: skip
    assert proc.poll() is not None and not parts.procs
    assert not (tmp_path / "storage").exists()
    assert "Provisioner started" in parts.log(parts.NAME).read_text()
