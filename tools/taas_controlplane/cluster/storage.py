"""The cluster's storage classes: rancher's local-path-provisioner (built from its Go module),
run on the host with the admin kubeconfig, as kind and k3s ship it.

    storage = Storage(plane, run_dir, node_names)
    storage.start()          # its namespace, ConfigMap and StorageClasses; the provisioner
    storage.exited()         # "local-path-provisioner" once it has exited, else None
    storage.stop()           # the provisioner
    storage.remove()         # every volume's directory (after the nodes' containers are gone)

Two classes, one provisioner (`storageClassConfigs`, which v0.0.30 reads):

- `local-path` (the default class): a directory per volume under `<run_dir>/storage/<node>/` of the
  node the claim's first pod is scheduled to (`WaitForFirstConsumer`); the volume's PV is bound
  to that node. ReadWriteOnce.
- `shared-path`: a directory per volume under `<run_dir>/storage/shared/`, which every node sees
  (the nodes share the host's file system), standing in for NFS: ReadWriteMany, no node
  affinity, so a pod recreated on another node after a node is lost finds its data.

The provisioner makes and removes each volume's directory through a helper pod on the node, running
the setup/teardown scripts of its ConfigMap in the toolbox image every node already has
(`taas_controlplane.build.busybox_images.TOOLBOX_IMAGE`, `imagePullPolicy: Never`): nothing is
pulled. Every directory is under the run's directory, so stopping the cluster (or the next start's
scrub of a killed run, which kills the provisioner by its command line) leaves nothing.
"""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path
from typing import Any

from taas_controlplane.build.binaries import ensure
from taas_controlplane.build.busybox_images import TOOLBOX_IMAGE
from taas_controlplane.cluster.addon_processes import HostParts
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_controlplane.parts import log_tail
from taas_operator.processes import stop as stop_process

NAMESPACE = "local-path-storage"
CONFIGMAP = "local-path-config"
SERVICE_ACCOUNT = "local-path-provisioner-service-account"
PROVISIONER = "rancher.io/local-path"
DEFAULT_CLASS = "local-path"
SHARED_CLASS = "shared-path"
#: What the provisioner logs (with --debug) once its config and helper pod template are read.
_STARTED = "Provisioner started"
_SETUP = '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n'
_TEARDOWN = '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n'


class StorageError(RuntimeError):
    """The provisioner did not start; the message has its log's tail."""


def provisioner_config(node_paths: dict[str, Path], shared_path: Path) -> dict[str, Any]:
    """The provisioner's config.json: each node's directory for `local-path`, the one shared
    directory for `shared-path`."""
    return {
        "storageClassConfigs": {
            DEFAULT_CLASS: {
                "nodePathMap": [
                    {"node": node, "paths": [str(path)]} for node, path in node_paths.items()
                ]
            },
            SHARED_CLASS: {"sharedFileSystemPath": str(shared_path)},
        }
    }


def helper_pod() -> dict[str, Any]:
    """The template of the pods that make and remove a volume's directory (the provisioner adds
    the node, the volumes and the command)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "helper-pod"},
        "spec": {
            "priorityClassName": "system-node-critical",
            "automountServiceAccountToken": False,
            "containers": [
                {"name": "helper-pod", "image": TOOLBOX_IMAGE, "imagePullPolicy": "Never"}
            ],
        },
    }


def storage_class(name: str, default: bool, binding: str) -> dict[str, Any]:
    annotations = {"storageclass.kubernetes.io/is-default-class": str(default).lower()}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "annotations": annotations},
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": binding,
    }


def objects(node_paths: dict[str, Path], shared_path: Path) -> list[dict[str, Any]]:
    """The namespace, ServiceAccount (of the helper pods; no rights), ConfigMap and classes."""
    data = {
        "config.json": json.dumps(provisioner_config(node_paths, shared_path), indent=2),
        "setup": _SETUP,
        "teardown": _TEARDOWN,
        "helperPod.yaml": json.dumps(helper_pod(), indent=2),  # JSON is YAML
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE},
            "automountServiceAccountToken": False,
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIGMAP, "namespace": NAMESPACE},
            "data": data,
        },
        storage_class(DEFAULT_CLASS, default=True, binding="WaitForFirstConsumer"),
        storage_class(SHARED_CLASS, default=False, binding="Immediate"),
    ]


def provisioner_argv(kubeconfig: str) -> list[str]:
    """The provisioner reading its config and helper pod from the ConfigMap, as upstream's."""
    return [
        str(ensure("local-path-provisioner")), "--debug", "start",
        f"--kubeconfig={kubeconfig}", f"--namespace={NAMESPACE}",
        f"--configmap-name={CONFIGMAP}", f"--service-account-name={SERVICE_ACCOUNT}",
        f"--helper-image={TOOLBOX_IMAGE}",
    ]  # fmt: skip


class Storage(HostParts):
    """The provisioner of one cluster (its log in `run_dir`) and the directories of its
    volumes under `run_dir/storage`."""

    error = StorageError
    NAME = "local-path-provisioner"

    def __init__(self, plane: ControlPlane, run_dir: Path, nodes: list[str]) -> None:
        super().__init__(plane, run_dir)
        self.volumes = run_dir / "storage"
        self.node_paths = {node: self.volumes / node for node in nodes}
        self.shared_path = self.volumes / "shared"

    def start(self, timeout: float = 60.0) -> Storage:
        """Make the directories, apply the objects, start the provisioner; wait until it has
        read its config."""
        for path in [*self.node_paths.values(), self.shared_path]:
            path.mkdir(parents=True, exist_ok=True)
        self._apply(objects(self.node_paths, self.shared_path))
        self._spawn(self.NAME, provisioner_argv(self.plane.kubeconfig), health="")
        proc, log = self.procs[self.NAME], self.log(self.NAME)
        deadline = time.monotonic() + timeout
        while _STARTED not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                why = (
                    f"exited ({proc.returncode})"
                    if proc.poll() is not None
                    else f"did not start after {timeout:.0f}s"
                )
                raise StorageError(f"{self.NAME} {why}; log {log}:\n{log_tail(log)}")
            time.sleep(0.2)
        return self

    def stop(self) -> None:
        """Stop the provisioner (before the pods are drained: it makes no helper pod then)."""
        proc = self.procs.pop(self.NAME, None)
        if proc is not None:
            stop_process(proc, signal.SIGTERM, grace=10.0)

    def remove(self) -> None:
        """Remove every volume's directory (the data of every claim of the run); after the
        nodes' containers are gone."""
        shutil.rmtree(self.volumes, ignore_errors=True)
