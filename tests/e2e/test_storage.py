"""The clusters' storage classes (taas_controlplane.cluster.storage): a claim of each is provisioned
by a helper pod in the node's toolbox image, written by a pod, and its directory removed when the
claim is deleted. The model directory on a PersistentVolumeClaim of the default class:
manifests/examples/mnist-on-a-volume.yaml's job, its chief killed
mid-training, is recreated and resumes from the last checkpoint the first chief wrote on the
claim, the job Succeeds, and its TensorBoard (the operator's, served by `taas tensorboard`) reads
the claim: scalars from before the kill and after it."""

from __future__ import annotations

import json
import re
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_controlplane.build.busybox_images import TOOLBOX_IMAGE
from taas_controlplane.cluster.cluster import Cluster
from tests.e2e.tensorboard_helpers import served_tensorboard
from tests.harness.real_cluster import (
    HOSTNAME,
    REPO,
    await_resumed_step,
    condition,
    get_json,
    kill_container_and_await_replacement,
    wait_finished,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node, pytest.mark.tensorflow, pytest.mark.slow]

MANIFEST = REPO / "manifests" / "examples" / "mnist-on-a-volume.yaml"


def _checkpoints(directory: Path) -> list[int]:
    """The steps of the checkpoints the `checkpoint` index of `directory` lists (newest last)."""
    index = directory / "checkpoint"
    text = index.read_text() if index.exists() else ""
    return [int(s) for s in re.findall(r'all_model_checkpoint_paths: ".*-(\d+)"', text)]


def _job(name: str) -> list[dict[str, Any]]:
    claim, tfjob = yaml.safe_load_all(MANIFEST.read_text())
    assert claim["kind"] == "PersistentVolumeClaim" and "storageClassName" not in claim["spec"]
    tfjob["metadata"]["name"] = name
    for spec in tfjob["spec"]["tfReplicaSpecs"].values():
        container = spec["template"]["spec"]["containers"][0]
        container.pop("resources", None)  # this machine's two cores
        env = {e["name"]: e for e in container["env"]}
        # More steps and frequent checkpoints and summaries, so the chief is killed mid-training
        # with a checkpoint behind it.
        for key, value in {"TF_MAX_STEPS": "3000", "TAAS_SAVE_CHECKPOINTS_SECS": "2",
                           "TAAS_SAVE_SUMMARIES_STEPS": "100"}.items():  # fmt: skip
            env[key] = {"name": key, "value": value}
        container["env"] = list(env.values())
    return [claim, tfjob]


def _claim_directory(cluster: Cluster, ns: str, claim: str) -> Path:
    """The host directory of the claim's volume, checked to be the node's local-path one."""
    pvc = get_json(cluster, "-n", ns, "pvc", claim)
    assert pvc["status"]["phase"] == "Bound", pvc["status"]
    assert pvc["spec"]["storageClassName"] == "local-path"  # the default class
    pv = get_json(cluster, "pv", pvc["spec"]["volumeName"])
    path = Path(pv["spec"]["hostPath"]["path"])
    assert path.parent == cluster.directory / "storage" / cluster.node_name, path
    return path


def test_each_class_provisions_a_directory_and_a_deleted_claim_removes_it(
    cluster: Cluster, ns: str
) -> None:
    claims = {"node-local": ("ReadWriteOnce", None), "shared": ("ReadWriteMany", "shared-path")}
    items: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim},
            "spec": {
                "accessModes": [mode],
                "resources": {"requests": {"storage": "1Mi"}},
                **({"storageClassName": cls} if cls else {}),
            },
        }
        for claim, (mode, cls) in claims.items()
    ]
    items.append(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "writer"},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "writer",
                        "image": TOOLBOX_IMAGE,
                        "imagePullPolicy": "Never",
                        "command": ["sh", "-c", "echo one > /a/f && echo two > /b/f"],
                        "volumeMounts": [
                            {"name": "a", "mountPath": "/a"},
                            {"name": "b", "mountPath": "/b"},
                        ],
                    }
                ],
                "volumes": [
                    {"name": name, "persistentVolumeClaim": {"claimName": claim}}
                    for name, claim in (("a", "node-local"), ("b", "shared"))
                ],
            },
        }
    )
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": items}
    ))  # fmt: skip
    wait(
        lambda: get_json(cluster, "-n", ns, "pod", "writer")["status"].get("phase") == "Succeeded",
        "the writer pod to succeed",
        timeout=180,
        every=1.0,
    )
    volumes = {}
    for claim, (mode, _) in claims.items():
        pvc = get_json(cluster, "-n", ns, "pvc", claim)
        pv = get_json(cluster, "pv", pvc["spec"]["volumeName"])
        assert pv["spec"]["accessModes"] == [mode]
        volumes[claim] = (pv["metadata"]["name"], Path(pv["spec"]["hostPath"]["path"]))
    local, shared = volumes["node-local"][1], volumes["shared"][1]
    assert get_json(cluster, "-n", ns, "pvc", "node-local")["spec"]["storageClassName"] == (
        "local-path"
    )
    assert local.parent == cluster.directory / "storage" / cluster.node_name, local
    assert shared.parent == cluster.directory / "storage" / "shared", shared
    assert (local / "f").read_text() == "one\n" and (shared / "f").read_text() == "two\n"
    pv = get_json(cluster, "pv", volumes["node-local"][0])
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == [cluster.node_name]
    assert "nodeAffinity" not in get_json(cluster, "pv", volumes["shared"][0])["spec"]

    cluster.kubectl("delete", "-n", ns, "pod", "writer", "--wait=true")
    cluster.kubectl("delete", "-n", ns, "pvc", *claims, "--wait=true")
    wait(
        lambda: not local.exists() and not shared.exists(),
        "the volumes' directories removed by the teardown helper pods",
        timeout=180,
        every=1.0,
    )
    wait(
        lambda: not get_json(cluster, "-n", "local-path-storage", "pods")["items"],
        "no helper pod left",
        timeout=60,
        every=1.0,
    )


@pytest.mark.timeout(1500)
def test_a_killed_chief_resumes_from_its_claim_and_tensorboard_reads_the_claim(
    cluster: Cluster, operator: str, trainer_image: str, ns: str, tmp_path: Path
) -> None:
    name = f"claim-{uuid.uuid4().hex[:6]}"
    claim, tfjob = _job(name)
    document = {"apiVersion": "v1", "kind": "List", "items": [claim, tfjob]}
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(document))
    chief = f"{name}-worker-0"
    directory = wait(
        lambda: (
            get_json(cluster, "-n", ns, "pvc", claim["metadata"]["name"])["status"].get("phase")
            == "Bound"
            and _claim_directory(cluster, ns, claim["metadata"]["name"])
        ),
        "the claim bound to a volume",
        timeout=180,
        every=1.0,
    )
    wait(
        lambda: [s for s in _checkpoints(directory) if s > 0],
        "a checkpoint on the claim",
        timeout=600,
        every=1.0,
    )
    kill_container_and_await_replacement(cluster, ns, chief, timeout=300, every=0.5)
    written = _checkpoints(directory)  # the first chief's, before the new one restores
    step = await_resumed_step(cluster, ns, chief, timeout=300)
    assert step > 0 and step == written[-1], (step, written)
    job = wait_finished(cluster, ns, name, timeout=900)
    assert (condition(job, "Succeeded") or {}).get("status") == "True", job["status"]
    assert job["status"]["recreations"][chief]["lastExitCode"] == 137
    assert "test accuracy" in cluster.kubectl("logs", "-n", ns, chief).stdout

    # The operator's TensorBoard mounts the job's claim (read-only) ...
    board = get_json(cluster, "-n", ns, "deployment", f"{name}-tensorboard")["spec"]["template"]
    assert board["spec"]["volumes"] == [
        {"name": "model", "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
    ]
    assert board["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "model", "mountPath": "/model", "readOnly": True}
    ]
    # ... and `taas tensorboard` serves its scalars: both chiefs' summaries, from the claim.
    query = urllib.parse.urlencode({"run": ".", "tag": "loss"})
    with served_tensorboard(cluster, ns, name, tmp_path / "tensorboard.stderr") as fetch:

        def steps() -> list[int]:
            points = json.loads(fetch(f"data/plugin/scalars/scalars?{query}"))
            return sorted(s for _, s, _ in points)

        # The last summaries show up within a reload or two (--reload_interval=5).
        def through_the_end() -> list[int] | None:
            got = steps()
            return got if got and got[-1] >= 2900 else None

        shown = wait(
            through_the_end, "TensorBoard's loss to reach step 2900", timeout=120, every=1.0
        )
        assert shown[0] < step, (shown[:5], step)  # the first chief's summaries too


def _pod_on(name: str, node: str, script: str, claim: str) -> dict[str, Any]:
    """A toolbox pod on `node` (by its hostname label) running `script` with `claim` at /d."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {HOSTNAME: node},
            "containers": [
                {
                    "name": name,
                    "image": TOOLBOX_IMAGE,
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", script],
                    "volumeMounts": [{"name": "d", "mountPath": "/d"}],
                }
            ],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }


@pytest.mark.nodes3
def test_a_shared_path_claim_is_read_on_another_node(cluster: Cluster, ns: str) -> None:
    """What a node-loss test needs: data one node wrote, read by a pod on another node."""
    first, second = cluster.node_names[:2]
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "shared"},
        "spec": {
            "storageClassName": "shared-path",
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": "1Mi"}},
        },
    }
    writer = _pod_on("writer", first, "echo from-$NODE > /d/f", "shared")
    writer["spec"]["containers"][0]["env"] = [{"name": "NODE", "value": first}]
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": [claim, writer]}
    ))  # fmt: skip

    def phase(pod: str) -> str:
        return str(get_json(cluster, "-n", ns, "pod", pod)["status"].get("phase"))

    wait(lambda: phase("writer") == "Succeeded", "the writer to succeed", timeout=180, every=1.0)
    reader = _pod_on("reader", second, "cat /d/f", "shared")
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(reader))
    wait(lambda: phase("reader") == "Succeeded", "the reader to succeed", timeout=180, every=1.0)
    assert get_json(cluster, "-n", ns, "pod", "reader")["spec"]["nodeName"] == second
    assert cluster.kubectl("logs", "-n", ns, "reader").stdout == f"from-{first}\n"
