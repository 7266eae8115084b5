"""Helpers of the tests on a real cluster (tests/e2e; fixtures in its conftest.py): kubectl and
Helm against the cluster, a job's pods, a container killed as a crash would end it, and
small TFJobs that need no TensorFlow."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from taas_controlplane.build.binaries import ensure
from taas_controlplane.build.busybox_images import TOOLBOX_IMAGE
from taas_controlplane.cluster.cluster import Cluster
from tests.harness.waiting import wait

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "taas"
RELEASE, OPERATOR_NS = "taas", "taas-system"
#: Kubeflow's label on a TFJob's pods and services (its value: the job's name).
JOB_LABEL = "training.kubeflow.org/job-name"
#: The label naming a node (a topology key, a nodeSelector).
HOSTNAME = "kubernetes.io/hostname"
#: The chart values of the session's release (conftest's `operator`): progress read every 5 s,
#: so jobs of a few tens of seconds show theirs.
SESSION_VALUES = ("logLevel=DEBUG", "progress.intervalSeconds=5")


def helm(cluster: Cluster, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the project's Helm against the cluster."""
    return subprocess.run(
        [str(ensure("helm")), "--kubeconfig", cluster.kubeconfig, *args],
        capture_output=True,
        text=True,
        check=check,
        timeout=300,
    )


def install_chart(cluster: Cluster, *values: str) -> None:
    """`helm upgrade --install` the chart with the loaded operator image; waits until Ready."""
    sets = [arg for value in ("image.pullPolicy=Never", *values) for arg in ("--set", value)]
    helm(
        cluster, "upgrade", "--install", RELEASE, str(CHART), "--namespace", OPERATOR_NS,
        "--create-namespace", *sets, "--wait", "--timeout", "240s",
    )  # fmt: skip


def get_json(cluster: Cluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def job_pods(cluster: Cluster, ns: str, job: str) -> list[dict[str, Any]]:
    """The pods of the TFJob (by its job-name label), deleted or not."""
    return list(get_json(cluster, "-n", ns, "pods", "-l", f"{JOB_LABEL}={job}")["items"])


def exec_in(
    cluster: Cluster, ns: str, pod: str, script: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run a shell script in a pod's container (kubectl exec, through kubelet)."""
    return cluster.kubectl("exec", "-n", ns, pod, "--", "sh", "-c", script, check=check)


def operator_pods(cluster: Cluster) -> list[dict[str, Any]]:
    """The operator's pods (the chart's selector labels), not yet being deleted."""
    pods = get_json(
        cluster, "pods", "-n", OPERATOR_NS, "-l", f"app.kubernetes.io/instance={RELEASE}"
    )["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def condition(tfjob: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in (tfjob.get("status") or {}).get("conditions") or []:
        if cond["type"] == type_:
            return dict(cond)
    return None


def wait_finished(cluster: Cluster, ns: str, name: str, timeout: float = 600.0) -> dict[str, Any]:
    """Wait until the TFJob has Succeeded or Failed True; return it."""

    def finished() -> dict[str, Any] | None:
        job = get_json(cluster, "-n", ns, "tfjob", name)
        done = [
            t for t in ("Succeeded", "Failed") if (condition(job, t) or {}).get("status") == "True"
        ]
        return job if done else None

    return dict(wait(finished, f"TFJob {ns}/{name} to finish", timeout=timeout, every=2.0))


def kill_container_and_await_replacement(
    cluster: Cluster, ns: str, pod_name: str, timeout: float, every: float = 1.0
) -> dict[str, Any]:
    """SIGKILL the pod's one container through containerd, as an OOM kill or a crash would end
    it; wait until a new pod of that name (another uid) is Running and return it."""
    before = get_json(cluster, "-n", ns, "pod", pod_name)
    (container_id,) = [
        s["containerID"].split("://", 1)[1] for s in before["status"]["containerStatuses"]
    ]
    cluster.runtime.ctr("tasks", "kill", "--signal", "SIGKILL", container_id)

    def recreated() -> dict[str, Any] | None:
        pods = get_json(cluster, "-n", ns, "pods", "--field-selector", f"metadata.name={pod_name}")
        items = [p for p in pods["items"] if p["metadata"]["uid"] != before["metadata"]["uid"]]
        return items[0] if items and items[0]["status"].get("phase") == "Running" else None

    return dict(
        wait(recreated, f"pod {pod_name} recreated and running", timeout=timeout, every=every)
    )


def await_resumed_step(cluster: Cluster, ns: str, chief: str, timeout: float) -> int:
    """Wait until the chief's log says it resumed from a checkpoint; return that step."""
    resumed = wait(
        lambda: re.search(
            r"chief; resuming from checkpoint \S+-(\d+)",
            cluster.kubectl("logs", "-n", ns, chief, check=False).stdout,
        ),
        "the new chief resuming from the checkpoint",
        timeout=timeout,
        every=1.0,
    )
    return int(resumed.group(1))


def toolbox_tfjob(
    name: str,
    script: str,
    replicas: dict[str, int] | None = None,
    restart_policy: str = "Never",
    run_policy: dict[str, Any] | None = None,
    image: str = TOOLBOX_IMAGE,
    command: list[str] | None = None,
) -> str:
    """A TFJob (JSON) whose replicas run `script` (or `command`) in busybox: for what needs no
    TensorFlow."""
    container = {
        "name": "tensorflow",
        "image": image,
        "imagePullPolicy": "Never",
        "command": command or ["sh", "-c", script],
        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
    }
    spec = {"containers": [container], "volumes": [{"name": "scratch", "emptyDir": {}}]}
    return json.dumps(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {"name": name},
            "spec": {
                "runPolicy": run_policy or {},
                "tfReplicaSpecs": {
                    rtype: {
                        "replicas": count,
                        "restartPolicy": restart_policy,
                        "template": {"spec": spec},
                    }
                    for rtype, count in (replicas or {"Worker": 1}).items()
                },
            },
        }
    )


def web_server(name: str, greeting: str = "hello", node: str | None = None) -> str:
    """YAML of a busybox httpd pod `name` serving `greeting` on 8080 (ready once it listens),
    on `node` if given, and a ClusterIP Service `name` on port 80 in front of it."""
    from taas_controlplane.build.busybox_images import TOOLBOX_IMAGE

    placed = f"\n  nodeName: {node}" if node else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {{app: {name}}}}}
spec:{placed}
  containers:
  - name: web
    image: {TOOLBOX_IMAGE}
    imagePullPolicy: Never
    command: ["sh", "-c", "echo {greeting} >/www/index.html; exec httpd -f -p 8080 -h /www"]
    volumeMounts: [{{name: www, mountPath: /www}}]
    readinessProbe: {{tcpSocket: {{port: 8080}}, periodSeconds: 1}}
  volumes: [{{name: www, emptyDir: {{}}}}]
---
apiVersion: v1
kind: Service
metadata: {{name: {name}}}
spec: {{selector: {{app: {name}}}, ports: [{{port: 80, targetPort: 8080}}]}}
"""


def python_pod_output(
    cluster: Cluster, ns: str, name: str, image: str, script: str, timeout: float = 180.0
) -> str:
    """Run `script` with `python -c` in a one-off pod of `image` (the trainer image: Python,
    gRPC, no privileges); its output once it has ended (exit 0 or not)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "probe",
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["python", "-c", script],
                }
            ],
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))

    def ended() -> bool:
        phase = get_json(cluster, "-n", ns, "pod", name)["status"].get("phase")
        return phase in ("Succeeded", "Failed")

    wait(ended, f"pod {ns}/{name} to end", timeout=timeout, every=2.0)
    return cluster.kubectl("logs", "-n", ns, name).stdout
