"""The program a job's TensorBoard pod runs (`tensorboard/pod_program.py`), run here as the
Deployment's command says, on real TensorBoard: its page comes without
`Content-Encoding: identity`, the header the apiserver's service proxy cannot pass on for HTML
(the e2e test `test_user_view` reads the page through that proxy)."""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from pathlib import Path

from taas_operator.api import parse_tfjob
from taas_operator.processes import LOCAL_IP, free_ports, spawn, stop
from taas_operator.tensorboard.objects import desired_tensorboard


def _pod_command(logdir: Path) -> list[str]:
    job = parse_tfjob(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {"name": "board", "namespace": "default"},
            "spec": {
                "tfReplicaSpecs": {
                    "Worker": {
                        "replicas": 1,
                        "template": {
                            "spec": {
                                "containers": [
                                    {
                                        "name": "tensorflow",
                                        "image": "t:1",
                                        "env": [{"name": "TF_LOGDIR", "value": str(logdir)}],
                                        "volumeMounts": [{"name": "m", "mountPath": "/"}],
                                    }
                                ],
                                "volumes": [{"name": "m", "hostPath": {"path": "/"}}],
                            }
                        },
                    }
                }
            },
        }
    )
    deployment, _ = desired_tensorboard(job, "t:1")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return [*container["command"], *container["args"]]


def test_the_pods_program_serves_tensorboards_page_without_an_identity_encoding(
    tmp_path: Path,
) -> None:
    (port,) = free_ports(1)
    argv = _pod_command(tmp_path)
    assert argv[0] == "python" and f"--logdir={tmp_path}" in argv
    argv = [shutil.which("python") or "python", *argv[1:]]
    argv = [a for a in argv if not a.startswith(("--host=", "--port="))]
    board = spawn([*argv, f"--host={LOCAL_IP}", f"--port={port}"])
    url = f"http://{LOCAL_IP}:{port}/"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "data/environment", timeout=10) as answer:
                    environment = json.loads(answer.read())
                break
            except OSError:
                assert board.poll() is None, board.communicate()[0].decode()[-3000:]
                assert time.monotonic() < deadline, "TensorBoard did not serve in 120 s"
                time.sleep(0.5)
        assert environment["data_location"] == str(tmp_path)
        with urllib.request.urlopen(url, timeout=30) as answer:
            page = answer.read().decode()
            assert answer.headers.get("Content-Type", "").startswith("text/html")
            assert answer.headers.get("Content-Encoding") is None, dict(answer.headers)
        assert 'src="index.js' in page, page[-500:]
    finally:
        stop(board, grace=10)
