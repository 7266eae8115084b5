"""Three real nodes on this machine (`Cluster(nodes=3)`): each its own network namespace,
containerd, kubelet, kube-proxy and kube-router; pods reach each other, services and DNS across
nodes; the job's NetworkPolicy holds across nodes; TensorFlow trains with one worker per node
to the same weights as with every worker on one node; the PS examples (ParameterServerStrategy,
graph mode async and sync) train with their replicas over the three nodes.

Replicas are spread by required pod anti-affinity on the job's name label (one replica of a job
per node) or, for 4 replicas, a topology spread constraint (at most one more on a node than on
another), as a user spreads replicas on a real cluster."""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_controlplane.cluster.cluster import Cluster
from tests.harness.real_cluster import (
    HOSTNAME,
    JOB_LABEL,
    REPO,
    condition,
    exec_in,
    get_json,
    job_pods,
    toolbox_tfjob,
    wait_finished,
    web_server,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node, pytest.mark.nodes3]

# Every replica answers "ok from <name>" on its TF port (2222), one connection at a time.
SERVE = 'while true; do echo "ok from $HOSTNAME" | nc -l -p 2222; done'


def _web(index: int) -> str:
    return web_server(f"web-{index}", f"hello from {index}", node=f"taas-node-{index}")


def _get(cluster: Cluster, ns: str, pod: str, address: str, port: int) -> str:
    request = f'printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 5 {address} {port}'
    return exec_in(cluster, ns, pod, request, check=False).stdout


def _spread(job: dict[str, Any]) -> dict[str, Any]:
    """Every replica of the job on a node of its own (required anti-affinity on its name)."""
    name = job["metadata"]["name"]
    term = {"labelSelector": {"matchLabels": {JOB_LABEL: name}}, "topologyKey": HOSTNAME}
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["template"]["spec"]["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    return job


def _running(cluster: Cluster, ns: str, job: str, count: int) -> list[dict[str, Any]]:
    def ready() -> list[dict[str, Any]] | None:
        pods = job_pods(cluster, ns, job)
        up = [p for p in pods if p["status"].get("phase") == "Running"]
        return up if len(up) == count else None

    return list(wait(ready, f"{count} running pods of {job}", timeout=180, every=1.0))


def test_three_nodes_each_with_its_own_pod_range_reach_each_other(
    cluster: Cluster, ns: str
) -> None:
    net = cluster.network
    nodes = {n["metadata"]["name"]: n for n in get_json(cluster, "nodes")["items"]}
    assert sorted(nodes) == ["taas-node-0", "taas-node-1", "taas-node-2"]
    for index, name in enumerate(sorted(nodes)):
        node = nodes[name]
        assert node["spec"]["podCIDR"] == net.node_pod_cidr(index)
        addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
        assert addresses["InternalIP"] == net.node_ip(index)
    for index in range(3):
        cluster.kubectl("apply", "-n", ns, "-f", "-", input=_web(index))
    for index in range(3):
        cluster.kubectl(
            "wait", "-n", ns, "--for=condition=Ready", f"pod/web-{index}", "--timeout=120s"
        )
    pods = {index: get_json(cluster, "-n", ns, "pod", f"web-{index}") for index in range(3)}
    for index, pod in pods.items():
        ip = ipaddress.ip_address(pod["status"]["podIP"])
        assert ip in ipaddress.ip_network(net.node_pod_cidr(index)), (index, ip)
    # Pod to pod across nodes (the static routes), by ClusterIP and by name (kube-proxy of
    # the client's node, CoreDNS on the host) from node 0 to the pods of nodes 1 and 2.
    domain = net.cluster_domain
    for index in (1, 2):
        assert f"hello from {index}" in _get(cluster, ns, "web-0", pods[index]["status"]["podIP"],
                                             8080)  # fmt: skip
        name = f"web-{index}.{ns}.svc.{domain}"
        page = wait(
            lambda name=name: (lambda out: out if "hello" in out else None)(
                _get(cluster, ns, "web-0", name, 80)
            ),
            f"{name} answering from web-0",
            timeout=60,
            every=1.0,
        )
        assert f"hello from {index}" in page
    # The API server's ClusterIP from a pod of another node than node 0.
    exec_in(cluster, ns, "web-2", f"nc -w 5 {net.service_ip(1)} 443 </dev/null")
    # Pods' routes: their node's range on-link, the cluster's and the services' through their
    # node, nothing else (no default route off the machine).
    routes = exec_in(cluster, ns, "web-1", "ip route").stdout.splitlines()
    destinations = sorted(line.split()[0] for line in routes)
    assert destinations == sorted([net.service_cidr, net.cluster_cidr, net.node_pod_cidr(1)])
    off_machine = exec_in(cluster, ns, "web-1", "ip route get 1.1.1.1 2>&1", check=False)
    assert "unreachable" in off_machine.stdout.lower(), off_machine.stdout
    # Each node's kube-proxy and kube-router chains are in its own namespace, not the host's.
    for node in cluster.nodes:
        rules = node.iptables("filter")
        assert ":KUBE-ROUTER-FORWARD" in rules and ":KUBE-SERVICES" in rules, node.name
    assert not [r for r in cluster.host_state().iptables if "KUBE-" in r]


def test_network_policy_holds_across_nodes(cluster: Cluster, operator: str, ns: str) -> None:
    """The job's replicas (one per node) reach its PS; a pod of another job, on another node
    than the PS, is turned away by the PS's node's kube-router."""
    guarded = _spread(json.loads(toolbox_tfjob("guarded", SERVE, {"PS": 1, "Worker": 2})))
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(guarded))
    pods = {p["metadata"]["name"]: p for p in _running(cluster, ns, "guarded", 3)}
    placed = {name: p["spec"]["nodeName"] for name, p in pods.items()}
    assert len(set(placed.values())) == 3, placed
    ps_ip, ps_node = pods["guarded-ps-0"]["status"]["podIP"], placed["guarded-ps-0"]
    elsewhere = next(n for n in cluster.node_names if n != ps_node)
    stranger = json.loads(toolbox_tfjob("stranger", "sleep 100000"))
    template = stranger["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    template["nodeSelector"] = {HOSTNAME: elsewhere}
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(stranger))
    (other,) = _running(cluster, ns, "stranger", 1)
    assert other["spec"]["nodeName"] != ps_node

    def connect(pod: str) -> str:
        done = exec_in(cluster, ns, pod, f"nc -w 3 {ps_ip} 2222 </dev/null", check=False)
        return done.stdout + done.stderr

    for worker in ("guarded-worker-0", "guarded-worker-1"):
        assert placed[worker] != ps_node
        wait(
            lambda w=worker: "ok from" in connect(w),
            f"{worker} reaching the PS across nodes",
            timeout=120.0,
            every=1.0,
        )
    for _ in range(3):
        answer = connect("stranger-worker-0")
        assert "ok from" not in answer, f"another job's pod reached the PS: {answer}"
        assert "refused" in answer or "timed out" in answer.lower(), answer
    assert "ok from guarded-ps-0" in wait(
        lambda: (lambda out: out if "ok from" in out else None)(connect("guarded-worker-0")),
        "the PS answering its own job afterwards",
        timeout=120.0,
        every=1.0,
    )


PROGRAM = Path(__file__).parent / "programs" / "seeded_digits.py"


def _mwms(name: str, trainer_image: str) -> dict[str, Any]:
    """examples/keras_digits/mwms.yaml with 3 workers and no evaluator, running the seeded
    program (tests/e2e/programs/seeded_digits.py, from the ConfigMap `seeded-digits`)."""
    job = yaml.safe_load((REPO / "examples" / "keras_digits" / "mwms.yaml").read_text())
    job["metadata"]["name"] = name
    del job["spec"]["tfReplicaSpecs"]["Evaluator"]
    workers = job["spec"]["tfReplicaSpecs"]["Worker"]
    workers["replicas"] = 3
    pod = workers["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == trainer_image  # the example runs as it is, but for the program
    container["command"] = ["python", "/programs/seeded_digits.py"]
    container["volumeMounts"] = [{"name": "programs", "mountPath": "/programs"}]
    pod["volumes"] = [{"name": "programs", "configMap": {"name": "seeded-digits"}}]
    return job


def _final_weights(cluster: Cluster, ns: str, job: str) -> list[float]:
    log = cluster.kubectl("logs", "-n", ns, f"{job}-worker-0").stdout
    lines = [line for line in log.splitlines() if line.startswith("final weights: ")]
    assert lines, log[-3000:]
    return list(json.loads(lines[-1].removeprefix("final weights: ")))


@pytest.mark.tensorflow
@pytest.mark.slow
def test_mwms_across_three_nodes_trains_the_same_weights_as_on_one(
    cluster: Cluster, operator: str, trainer_image: str, ns: str
) -> None:
    """The same seeded MultiWorkerMirroredStrategy job twice at once: its 3 workers one per
    node (the all-reduce crosses the nodes), and all 3 on one node. Both Succeed with the same
    final weights (within 1e-5)."""
    cluster.kubectl(
        "create", "configmap", "seeded-digits", "-n", ns, f"--from-file={PROGRAM.name}={PROGRAM}"
    )
    spread = _spread(_mwms("spread", trainer_image))
    together = _mwms("together", trainer_image)
    together["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] = {
        HOSTNAME: cluster.node_names[0]
    }
    for job in (spread, together):
        cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(job))

    def placed(job: str) -> list[str] | None:
        nodes = [p["spec"].get("nodeName") for p in job_pods(cluster, ns, job)]
        return nodes if len(nodes) == 3 and None not in nodes else None

    assert sorted(
        wait(lambda: placed("spread"), "spread's 3 workers placed", timeout=120.0, every=1.0)
    ) == sorted(cluster.node_names)
    assert set(
        wait(lambda: placed("together"), "together's 3 workers placed", timeout=120.0, every=1.0)
    ) == {cluster.node_names[0]}
    for job in ("spread", "together"):
        done = wait_finished(cluster, ns, job, timeout=900)
        assert (condition(done, "Succeeded") or {}).get("status") == "True", done.get("status")
    across, one = _final_weights(cluster, ns, "spread"), _final_weights(cluster, ns, "together")
    assert len(across) == len(one) == 64 * 64 + 64 + 64 * 10 + 10
    worst = max(abs(a - b) for a, b in zip(across, one, strict=True))
    assert worst <= 1e-5, f"the weights differ by up to {worst}"
    for job in ("spread", "together"):  # trained, not left at their (equal) initial values
        assert _accuracy(cluster, ns, f"{job}-worker-0") > 0.9


def _accuracy(cluster: Cluster, ns: str, pod: str) -> float:
    log = cluster.kubectl("logs", "-n", ns, pod).stdout
    match = re.search(r"test accuracy: ([0-9.]+)", log)
    assert match, log[-3000:]
    return float(match.group(1))


def _spread_evenly(job: dict[str, Any]) -> dict[str, Any]:
    """The job's replicas over the nodes, at most one more on one node than on another."""
    name = job["metadata"]["name"]
    constraint = {
        "maxSkew": 1,
        "topologyKey": HOSTNAME,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {JOB_LABEL: name}},
    }
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["template"]["spec"]["topologySpreadConstraints"] = [constraint]
    return job


@pytest.mark.tensorflow
@pytest.mark.slow
@pytest.mark.parametrize(
    ("example", "chief"),
    [
        ("keras_digits/pss.yaml", "chief-0"),  # ParameterServerStrategy: PS, chief, 2 workers
        ("mnist/async.yaml", "worker-0"),  # graph mode, 1 PS + 2 workers, asynchronous
        ("mnist/sync.yaml", "worker-0"),  # and synchronous
    ],
)
def test_ps_jobs_train_across_three_nodes(
    cluster: Cluster, operator: str, trainer_image: str, ns: str, example: str, chief: str
) -> None:
    """The repository's PS examples, unchanged but for a topology spread over the 3 nodes:
    every node runs a replica, the job Succeeds, the chief's accuracy is printed."""
    job = yaml.safe_load((REPO / "examples" / example).read_text())
    name = job["metadata"]["name"]
    count = sum(spec["replicas"] for spec in job["spec"]["tfReplicaSpecs"].values())
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(_spread_evenly(job)))

    def placed() -> list[str] | None:
        nodes = [p["spec"].get("nodeName") for p in job_pods(cluster, ns, name)]
        return nodes if len(nodes) == count and None not in nodes else None

    nodes = wait(placed, f"{name}'s {count} replicas placed", timeout=120.0, every=1.0)
    assert set(nodes) == set(cluster.node_names), nodes
    done = wait_finished(cluster, ns, name, timeout=900)
    assert (condition(done, "Succeeded") or {}).get("status") == "True", done.get("status")
    assert trainer_image in json.dumps(job)
    assert _accuracy(cluster, ns, f"{name}-{chief}") > 0.9
