"""The one-node cluster itself: pods get addresses on the cluster's own bridge and nothing
beyond it, ClusterIPs and service names work in pods, and stopping leaves nothing behind (a
claimed volume's directory included; with three nodes, one of them powered off first)."""

from __future__ import annotations

import ipaddress
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import IO

import pytest

from taas_controlplane.build.busybox_images import TOOLBOX_IMAGE, toolbox_archive, write_archive
from taas_controlplane.cluster.cluster import NODE_BINARIES, Cluster
from taas_controlplane.cluster.machine_lock import clean_stale_run
from taas_controlplane.node.host_scrub import run_processes
from tests.harness.real_cluster import (
    exec_in,
    get_json,
    web_server,
)
from tests.harness.waiting import wait

pytestmark = pytest.mark.node

SERVER = (
    web_server("web")
    + f"""---
apiVersion: v1
kind: Service
metadata: {{name: web-headless}}
spec: {{clusterIP: None, selector: {{app: web}}, ports: [{{port: 8080}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: client}}
spec:
  containers:
  - name: client
    image: {TOOLBOX_IMAGE}
    imagePullPolicy: Never
    command: ["sleep", "100000"]
"""
)


# A pod holding a claim of the default class (a directory under the run's `storage/`).
CLAIMED = f"""
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data}}
spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Mi}}}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: claimed}}
spec:
  containers:
  - name: c
    image: {TOOLBOX_IMAGE}
    imagePullPolicy: Never
    command: ["sh", "-c", "echo kept > /data/f && sleep 100000"]
    volumeMounts: [{{name: data, mountPath: /data}}]
  volumes: [{{name: data, persistentVolumeClaim: {{claimName: data}}}}]
"""


def _start_web(cluster: Cluster, ns: str) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=SERVER)
    for pod in ("web", "client"):
        cluster.kubectl("wait", "-n", ns, "--for=condition=Ready", f"pod/{pod}", "--timeout=120s")


@pytest.mark.own_cluster
@pytest.mark.builds(*NODE_BINARIES)
@pytest.mark.parametrize("nodes", [1, 3])
def test_stopping_leaves_nothing_behind(nodes: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="taas-e2e-", dir="/tmp"))
    cluster = Cluster(work / "node", nodes=nodes)
    before = cluster.host_state()
    try:
        cluster.start()
        cluster.load_image(toolbox_archive())
        cluster.kubectl("create", "namespace", "leftovers")
        _start_web(cluster, "leftovers")
        policy = (
            "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: deny}\n"
            "spec: {podSelector: {matchLabels: {app: web}}, policyTypes: [Ingress]}\n"
        )
        cluster.kubectl("apply", "-n", "leftovers", "-f", "-", input=policy)
        cluster.kubectl("apply", "-n", "leftovers", "-f", "-", input=CLAIMED)
        cluster.kubectl("wait", "-n", "leftovers", "--for=condition=Ready", "pod/claimed",
                        "--timeout=120s")  # fmt: skip
        volumes = cluster.storage.volumes
        assert list(volumes.glob("*/*/f")), "no volume directory under the run's storage/"
        during = cluster.host_state()
        # The check sees the run's own things while it runs (else it could not fail after).
        assert during.processes and during.links and during.cgroups
        assert [m for m in during.mounts if m.startswith(str(work))], during.mounts
        # One node: kube-proxy's and kube-router's chains are the host's; more: each node's
        # are in its namespace (whose file is one of the mounts, gone with it).
        chains = [cluster.host_state().iptables] if nodes == 1 else [
            n.iptables("filter").splitlines() for n in cluster.nodes
        ]  # fmt: skip
        for rules in chains:
            assert [r for r in rules if "KUBE-ROUTER" in r], rules
            assert [r for r in rules if "KUBE-SERVICES" in r], rules
        if nodes > 1:
            netns = [m for m in during.mounts if m.endswith("/netns")]
            assert len(netns) == nodes, during.mounts
            _power_off_web_node(cluster)
    finally:
        cluster.stop()
    after = cluster.host_state()
    volumes_left = volumes.exists()
    shutil.rmtree(work, ignore_errors=True)
    assert not volumes_left, "the volumes' directories outlived the cluster"
    assert cluster.containers_at_stop == []
    assert before.leftovers(after) == []
    assert after.sysctls == before.sysctls


def _power_off_web_node(cluster: Cluster) -> None:
    """The node of `web` powered off: no process of it is left (its kubelet, containerd,
    kube-proxy, kube-router, its containers' shims and processes), its link is down; what it
    leaves (mounts, cgroups, its namespace) is the cluster's stop's to remove."""
    name = get_json(cluster, "-n", "leftovers", "pod", "web")["spec"]["nodeName"]
    node = cluster.node(name)
    own = node.directory, node.runtime.state
    web = set(run_processes(*own)) & set(_pids_of(cluster, "web"))
    assert web, "web's processes are not found as its node's: the check could not fail"
    node.power_off()
    assert run_processes(*own) == []
    assert not [pid for pid in web if _alive(pid)], web
    assert node.ns is not None
    link = subprocess.run(["ip", "-o", "link", "show", node.ns.host_link], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    assert "state DOWN" in link, link
    # Only the node died: the control plane's components (CoreDNS, whose files are in node 0's
    # directory) and the other nodes' are all there.
    assert cluster.exited() is None


def _alive(pid: int) -> bool:
    """Running still: not gone, not a zombie (a killed container's process whose shim was
    killed too waits for its new parent to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _pids_of(cluster: Cluster, pod: str) -> list[int]:
    """Host pids of the pod's container processes (found by its container id's cgroup)."""
    status = get_json(cluster, "-n", "leftovers", "pod", pod)["status"]["containerStatuses"]
    (container,) = [s["containerID"].split("://", 1)[1] for s in status]
    procs = Path(f"/sys/fs/cgroup/pids/k8s.io/{container}/cgroup.procs").read_text()
    return [int(pid) for pid in procs.split()]


@pytest.mark.own_cluster
@pytest.mark.builds(*NODE_BINARIES)
@pytest.mark.parametrize("nodes", [1, 3])
def test_a_killed_run_is_scrubbed_by_the_next_start(nodes: int) -> None:
    """`cluster up` SIGKILLed with a pod running (its components get SIGTERM from the kernel,
    its containers' shims stay): what is left is removed by the scrub the next start runs first
    (`cluster clean` runs the same)."""
    work = Path(tempfile.mkdtemp(prefix="taas-e2e-", dir="/tmp"))
    directory = work / "node"
    before = Cluster(directory, nodes=nodes).host_state()
    command = [sys.executable, "-m", "taas_controlplane", "cluster", "up", "--dir", str(directory)]
    up = subprocess.Popen(
        [*command, "--nodes", str(nodes)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    try:
        assert up.stdout is not None
        lines = []
        for line in iter(up.stdout.readline, ""):
            lines.append(line)
            if "cluster ready" in line:
                break
        assert "cluster ready" in "".join(lines), "".join(lines)
        admin = str(directory / "controlplane" / "admin.kubeconfig")
        kubectl = ["kubectl", "--kubeconfig", admin]
        subprocess.run([*kubectl, "apply", "-f", "-"], input=_POD, text=True, check=True)
        subprocess.run(
            [*kubectl, "wait", "--for=condition=Ready", "pod/left", "--timeout=120s"], check=True
        )
    finally:
        up.kill()
        up.wait()
    left = Cluster(directory, nodes=nodes).host_state()
    assert before.leftovers(left), "the killed run left nothing: the check could not fail"
    assert clean_stale_run() == "removed a killed run's leftovers"
    after = Cluster(directory, nodes=nodes).host_state()
    shutil.rmtree(work, ignore_errors=True)
    assert before.leftovers(after) == []
    assert after.sysctls == before.sysctls


_POD = f"""
apiVersion: v1
kind: Pod
metadata: {{name: left}}
spec:
  containers:
  - {{name: c, image: {TOOLBOX_IMAGE}, imagePullPolicy: Never, command: [sleep, "100000"]}}
"""


def test_pods_get_routes_only_to_the_pod_and_service_ranges(cluster: Cluster, ns: str) -> None:
    _start_web(cluster, ns)
    pod = get_json(cluster, "-n", ns, "pod", "web")
    net = cluster.network
    assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(net.pod_cidr)
    routes = exec_in(cluster, ns, "client", "ip route").stdout.splitlines()
    destinations = sorted(line.split()[0] for line in routes)
    assert destinations == sorted([net.service_cidr, net.pod_cidr]), routes
    # `ip route get` asks the pod's routing table; no packet is sent.
    off_machine = exec_in(cluster, ns, "client", "ip route get 1.1.1.1 2>&1", check=False)
    assert "unreachable" in off_machine.stdout.lower(), off_machine.stdout
    rules = cluster.host_state().iptables
    assert [r for r in rules if net.guard_chain in r and "DROP" in r], rules
    assert not [r for r in rules if "MASQUERADE" in r and net.pod_cidr in r], rules


def test_services_and_dns_names_work_in_pods(cluster: Cluster, ns: str) -> None:
    _start_web(cluster, ns)
    svc_ip = get_json(cluster, "-n", ns, "service", "web")["spec"]["clusterIP"]
    pod_ip = get_json(cluster, "-n", ns, "pod", "web")["status"]["podIP"]
    domain = cluster.network.cluster_domain

    def lookup(name: str) -> str:
        return exec_in(cluster, ns, "client", f"nslookup {name}", check=False).stdout

    assert svc_ip in wait(
        lambda: lookup(f"web.{ns}.svc.{domain}") or "", "the service name", timeout=120.0, every=1.0
    )
    assert pod_ip in lookup(f"web-headless.{ns}.svc.{domain}")
    kubernetes_ip = cluster.network.service_ip(1)
    assert kubernetes_ip in lookup(f"kubernetes.default.svc.{domain}")
    resolv = exec_in(cluster, ns, "client", "cat /etc/resolv.conf").stdout
    # `<svc>.<ns>.svc` (TF_CONFIG's form) resolves through the search path.
    assert f"search {ns}.svc.{domain} svc.{domain} {domain}" in resolv
    request = f'printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 5 {svc_ip} 80'
    # kube-proxy programs the ClusterIP once the endpoint slice lists the ready pod.
    page = wait(
        lambda: (lambda out: out if "hello" in out else None)(
            exec_in(cluster, ns, "client", request, check=False).stdout
        ),
        "the ClusterIP answering",
        timeout=60,
        every=1.0,
    )
    assert "hello" in page
    exec_in(cluster, ns, "client", f"nc -w 5 {kubernetes_ip} 443 </dev/null")
    logs = cluster.kubectl("logs", "-n", ns, "web", check=False)
    assert logs.returncode == 0, logs.stderr


def test_an_image_replaced_under_its_tag_is_pruned_with_its_content(
    cluster: Cluster, tmp_path: Path
) -> None:
    """A new build imported under the same tag leaves the old image only under the name the
    CRI plugin gave it (its ID, `sha256:<config>`); the prune at each start removes that and
    containerd frees the old image's blobs. Tags and the images they name stay."""
    runtime = cluster.runtime
    tag = "taas.local/prune-test:1"
    old = write_archive(tmp_path / "old.tar", tag, b"", ["/bin/sh", "-c", "echo old"])
    runtime.import_archive(old)
    old_digest = runtime.image_records()[tag]
    old_config = _config_digest(old)
    wait(
        lambda: old_config in runtime.image_records(),
        "the CRI plugin's ID record",
        timeout=30,
        every=1.0,
    )
    new = write_archive(tmp_path / "new.tar", tag, b"", ["/bin/sh", "-c", "echo new"])
    runtime.import_archive(new)
    records = runtime.image_records()
    assert records[tag] != old_digest and records[old_config] == old_digest
    removed = runtime.prune_images()
    assert old_config in removed
    after = runtime.image_records()
    assert old_config not in after and after[tag] == records[tag]
    assert TOOLBOX_IMAGE in after and all(n in after for n in records if n not in removed)
    blobs = runtime.ctr("content", "list", "--quiet").stdout.split()
    assert old_digest not in blobs and old_config not in blobs
    runtime.ctr("images", "remove", "--sync", tag)


def _config_digest(archive: Path) -> str:
    with tarfile.open(archive) as tar:
        index = json.load(_member(tar, "index.json"))
        manifest = json.load(_member(tar, "blobs/sha256/" + index["manifests"][0]["digest"][7:]))
    return str(manifest["config"]["digest"])


def _member(tar: tarfile.TarFile, name: str) -> IO[bytes]:
    handle = tar.extractfile(name)
    assert handle is not None, name
    return handle
