"""Images through the cluster's registry, nothing side-loaded: docs/deploy.md's registry block,
run as written on the one-node cluster.

The block is the one after `<!-- runs: tests/e2e/test_registry.py -->`: `taas-controlplane images
--push` puts the operator and trainer images into the registry `cluster up` runs
(taas_controlplane.cluster.registry), the chart is installed with `image.repository` naming it, an
image `FROM` the trainer image with examples/your_image's program copied in is built with buildah
and pushed, and a TFJob runs it to Succeeded. It runs in bash with `-e -o pipefail`, from the
repository's root, without KUBECONFIG (`taas-controlplane env` finds the cluster and its
registry). The images are never imported here: the registry's references are first removed
from the node's containerd, and afterwards the pods' imageIDs, kubelet's `Pulled` events and
the registry's own log show that containerd pulled each one from the registry.
The block installs the chart as release `taas`, so this is a `chart_lifecycle` test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from taas_controlplane.build.image_store import Store
from taas_controlplane.cluster.cluster import Cluster
from tests.harness.markdown_blocks import block_run_by
from tests.harness.real_cluster import (
    OPERATOR_NS,
    RELEASE,
    REPO,
    get_json,
    helm,
    operator_pods,
    python_pod_output,
)

pytestmark = [
    pytest.mark.node,
    pytest.mark.chart_lifecycle,
    pytest.mark.tensorflow,
    pytest.mark.slow,
    pytest.mark.timeout(2400),
]

NAMESPACE = "your-code"


def _pulled_events(cluster: Cluster, namespace: str, pod: str) -> list[str]:
    events = get_json(
        cluster, "events", "-n", namespace, "--field-selector", f"involvedObject.name={pod}"
    )
    return [e["message"] for e in events["items"] if e["reason"] == "Pulled"]


def _forget(cluster: Cluster, prefix: str) -> None:
    """Remove every image record of the registry's `prefix` from the node's containerd (by tag,
    by digest, and the image IDs they point at), so that their content goes and a pull must
    fetch manifests and layers again."""
    records = cluster.runtime.image_records()
    ours = {name for name in records if name.startswith(prefix)}
    digests = {records[name] for name in ours}
    ids = {name for name, digest in records.items() if name.startswith("sha256:")}
    gone = sorted(ours | {name for name in ids if records[name] in digests})
    if gone:
        cluster.runtime.ctr("images", "remove", "--sync", *gone)


def test_the_docs_registry_block_runs_as_written(cluster: Cluster) -> None:
    registry = cluster.registry.address
    operator_ref = f"{registry}/taas/taas-operator:0.1.0"
    yours = f"{registry}/taas/your-image:0.1.0"
    trainer_ref = f"{registry}/taas/taas-trainer:0.1.0"
    _forget(cluster, f"{registry}/")
    assert not [name for name in cluster.runtime.image_records() if name.startswith(registry)]
    log_start = cluster.registry.log.stat().st_size
    block = block_run_by("tests/e2e/test_registry.py")
    assert block.startswith('eval "$(taas-controlplane env)"')
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PATH"] = f"{Path(sys.executable).parent}:{os.environ['PATH']}"  # the venv, as activated
    store = Store()
    try:
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=2100,
        )
        assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        # `images --push` said where each image went (the push side; pulled as `registry`).
        pushed_to = re.escape(cluster.registry.push_address)
        for name in ("taas-operator", "taas-trainer"):
            assert re.search(rf"^pushed {pushed_to}/taas/{name}:0\.1\.0@sha256:[0-9a-f]{{64}}$",
                             done.stdout, re.M), done.stdout  # fmt: skip
        learned = re.search(r"your model: w=(-?[0-9.]+) b=(-?[0-9.]+)", done.stdout)
        assert learned, done.stdout
        assert abs(float(learned[1]) - 3.0) < 0.2 and abs(float(learned[2]) + 1.0) < 0.2

        # The operator runs the pushed image, pulled from the registry by containerd.
        (pod,) = operator_pods(cluster)
        (status,) = pod["status"]["containerStatuses"]
        assert status["image"] == operator_ref
        assert status["imageID"].startswith(f"{registry}/taas/taas-operator@sha256:")
        pulls = _pulled_events(cluster, OPERATOR_NS, pod["metadata"]["name"])
        assert any(f'Successfully pulled image "{operator_ref}"' in m for m in pulls), pulls

        # So does the job with your image: pulled once, for the first of its replicas.
        pulls = [
            message
            for replica in ("ps-0", "worker-0", "worker-1")
            for message in _pulled_events(cluster, NAMESPACE, f"linear-regression-{replica}")
        ]
        assert any(f'Successfully pulled image "{yours}"' in m for m in pulls), pulls
        worker = get_json(cluster, "pod", "-n", NAMESPACE, "linear-regression-worker-0")
        (status,) = worker["status"]["containerStatuses"]
        assert status["imageID"].startswith(f"{registry}/taas/your-image@sha256:")
        assert {operator_ref, yours} <= set(cluster.runtime.image_records())

        # The registry saw containerd ask for both (and buildah push them); its access log:
        # `"GET /v2/<repo>/manifests/<ref> HTTP/1.1" 200 ... "containerd/..."`. Your image's
        # content is nowhere else, so containerd fetched its manifest (GET). The operator's
        # content may already be in the node's store under the side-loaded name the other node
        # tests use (the same digest): containerd then resolves the tag at the registry (HEAD)
        # and needs nothing more from it.
        with cluster.registry.log.open() as log:
            log.seek(log_start)
            requests = log.read()
        for repository, methods in (("taas/taas-operator", "GET|HEAD"), ("taas/your-image", "GET")):
            asked = rf'"(?:{methods}) /v2/{repository}/manifests/\S+ HTTP/1\.1" 200 .*"containerd/'
            assert re.search(asked, requests), f"containerd asked the registry for no {repository}"
    finally:
        cluster.kubectl("delete", "namespace", NAMESPACE, "--wait", "--timeout=300s", check=False)
        helm(cluster, "uninstall", RELEASE, "--namespace", OPERATOR_NS, "--wait", check=False)
        for reference in (yours, trainer_ref):  # the block's build, out of the image store
            subprocess.run(store.buildah("rmi", reference), env=store.env(),
                           capture_output=True, check=False)  # fmt: skip


#: What a pod tries against the registry (`python -c` in the trainer image): start an upload on
#: the pull side (the bridge address), with and without the run's credentials, and reach the
#: push side's port on the host's loopback and on the bridge address; one JSON line.
_PUSHER = """
import json, ssl, urllib.error, urllib.request
context = ssl._create_unverified_context()  # the outcome, not the certificate, is the question
def post(url, headers):
    request = urllib.request.Request(url, b"", headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError as err:
        return type(err).__name__
upload = "/v2/taas/taas-trainer/blobs/uploads/"
print(json.dumps({
    "pull": post(f"https://{PULL}{upload}", {}),
    "pull_with_password": post(f"https://{PULL}{upload}", {"Authorization": "Basic " + AUTH}),
    "push_loopback": post(f"https://127.0.0.1:{PUSH_PORT}{upload}", {}),
    "push_bridge": post(f"https://{PULL.split(':')[0]}:{PUSH_PORT}{upload}", {}),
}))
"""


@pytest.mark.timeout(900)
def test_a_pod_cannot_push_to_the_registry(cluster: Cluster, trainer_image: str, ns: str) -> None:
    """Issue 39: any pod could overwrite taas/taas-operator. From a pod: the pull side refuses
    the upload (read-only, 405) even with the run's password; the push side is on the host's
    loopback, which the pod's own loopback is not, and not on the bridge address."""
    registry = cluster.registry
    (entry,) = json.loads(registry.auth_file.read_text())["auths"].values()
    push_port = registry.push_address.rsplit(":", 1)[1]
    script = (
        f"PULL, PUSH_PORT, AUTH = {registry.address!r}, {push_port!r}, {entry['auth']!r}\n"
        + _PUSHER
    )
    output = python_pod_output(cluster, ns, "pusher", trainer_image, script)
    tried = json.loads(output.strip().splitlines()[-1])
    assert tried["pull"] == 405 and tried["pull_with_password"] == 405, tried
    assert tried["push_loopback"] not in (201, 202, 401), tried  # nothing answers there
    assert tried["push_bridge"] not in (201, 202, 401), tried
