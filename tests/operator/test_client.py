"""The Python client (`taas_operator.client.TFJobClient`) and the `taas submit | logs | get |
wait | delete` commands against the real apiserver, with the real operator running the jobs.

No kubelet runs: the test plays it (`kubelet_player`: pod phases through pods/status, and the
container logs the apiserver proxies from a node's kubelet endpoint, served by the test on
127.0.0.1). Every path starts a job, follows it and sees it end; every bad path (a missing job,
a missing CRD, RBAC refusing the user, a broken kubeconfig) is one clear message and exit 2.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas.core.publish import Publisher, document
from taas_controlplane.controlplane.certificates import CertificateAuthority
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.api import parse_tfjob
from taas_operator.client import (
    AlreadyExists,
    ConfigError,
    CrdMissing,
    Forbidden,
    Invalid,
    JobFailed,
    JobNotFound,
    TFJobClient,
    WaitTimeout,
)
from taas_operator.processes import free_ports
from tests.harness.kubelet_player import KubeletPlayer
from tests.harness.operator_run import (
    Api,
    StartOperator,
    condition,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]
TAAS = [sys.executable, "-m", "taas_operator.cli"]


@pytest.fixture(scope="module")
def ns(admin: Api, start_operator: StartOperator) -> str:
    name = new_namespace(admin, "client")
    start_operator(name, args=("--progress-interval=1",))
    return name


@pytest.fixture(scope="module")
def kubelet(admin: Api, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeletPlayer]:
    player = KubeletPlayer(admin, tmp_path_factory.mktemp("kubelet"))
    yield player
    player.close()


@pytest.fixture(scope="module")
def client(control_plane: ControlPlane, ns: str) -> TFJobClient:
    return TFJobClient(kubeconfig=control_plane.kubeconfig, namespace=ns)


def manifest(name: str, port: int | None = None, **spec: Any) -> dict[str, Any]:
    """1 PS + 2 workers; worker 0 (the chief) told where to serve progress."""
    env = [{"name": "TAAS_PROGRESS_PORT", "value": str(port)}] if port else []
    containers = [{"name": "tensorflow", "image": "example.com/t:1", "env": env}]
    return tfjob(name, {"PS": {}, "Worker": {"replicas": 2, "containers": containers}}, **spec)


def taas(*args: str, kubeconfig: str, ns: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*TAAS, *args, "--kubeconfig", kubeconfig, "-n", ns],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _pods(admin: Api, ns: str, name: str, count: int = 3) -> list[str]:
    return sorted(wait(lambda: len(p := admin.pods(ns, name)) == count and p, "pods"))


def one_error(result: subprocess.CompletedProcess) -> str:
    """Exit 2, one `error:` message (a spec's may list its fields on bullet lines, as `taas
    validate` does), no traceback."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("error: ") and result.stderr.count("error: ") == 1
    assert "Traceback" not in result.stderr
    assert "Traceback" not in result.stderr
    return str(result.stderr)


def test_submit_follows_a_job_to_its_end(
    admin: Api, ns: str, kubelet: KubeletPlayer, control_plane: ControlPlane, tmp_path: Path
) -> None:
    """`taas submit`: created, the live table with PROGRESS, merged logs with [replica]
    prefixes, the job's events, and exit 0 when it Succeeded."""
    port = free_ports(1)[0]
    chief = Publisher("worker:0", port=port)
    chief.update(document("worker:0", 500, 1000, 0.25, 800.0, 30.0))
    name = unique("sub")
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(manifest(name, port)))
    submit = subprocess.Popen(
        [*TAAS, "submit", str(path), "--kubeconfig", control_plane.kubeconfig, "-n", ns],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for pod in _pods(admin, ns, name):
            kubelet.run(ns, pod, [f"hello from {pod}"])
        wait(lambda: (admin.tfjob(ns, name) or {}).get("status", {}).get("progress"), "progress")
        kubelet.say(ns, f"{name}-worker-0", "step 500 of 1000")
        time.sleep(2)  # a table redraw or two with the progress
        kubelet.end(ns, f"{name}-worker-0", "Succeeded", exit_code=0)
        for other in (f"{name}-ps-0", f"{name}-worker-1"):  # stopped by cleanPodPolicy
            kubelet.end(ns, other, "Succeeded")
        out, err = submit.communicate(timeout=60)
    finally:
        submit.kill()
    assert submit.returncode == 0, out + err
    assert out.startswith(f"tfjob.kubeflow.org/{name} created (namespace {ns})\n")
    for pod in ("ps-0", "worker-0", "worker-1"):
        assert f"[{pod}] hello from {name}-{pod}\n" in out
    assert "[worker-0] step 500 of 1000\n" in out
    assert "taas: Normal TFJobCreated: TFJob " in out and "taas: Normal TFJobSucceeded:" in out
    assert re.search(rf"^{name}\s+Running\s+50%\s+30s\s", out, flags=re.MULTILINE), out
    assert re.search(rf"^{name}/worker-0\s+Running\s+0\s+{kubelet.node}\s+127.0.0.1", out, re.M)
    assert out.rstrip().endswith(f"TFJob {name} Succeeded")
    assert "Traceback" not in err


def test_the_client_creates_follows_and_ends_jobs(
    admin: Api, ns: str, kubelet: KubeletPlayer, client: TFJobClient, tmp_path: Path
) -> None:
    """create (dict, model, YAML path), get, list, pods, events, logs, watch, wait with a
    callback, suspend/resume, delete: each through the real apiserver."""
    a, b, c = unique("cl-a"), unique("cl-b"), unique("cl-c")
    job_a = client.create(manifest(a))
    assert job_a.name == a and job_a.namespace == ns and job_a.metadata.uid
    client.create(parse_tfjob(manifest(b)))
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(manifest(c)))
    client.create(str(path))
    assert {a, b, c} <= {j.name for j in client.list()}
    with pytest.raises(AlreadyExists, match=f'TFJob "{a}" already exists in namespace "{ns}"'):
        client.create(manifest(a))

    changes = client.watch(name=a, timeout=60)
    first = next(changes)
    assert (first.type, first.job.name) == ("ADDED", a)

    pods = _pods(admin, ns, a)
    for pod in pods:
        kubelet.run(ns, pod, [f"{pod} up"])
    assert [p.replica for p in client.pods(a)] == ["ps-0", "worker-0", "worker-1"]
    assert all(p.node == kubelet.node and p.phase == "Running" for p in client.pods(a))
    wait(lambda: client.is_running(a), "Running")
    assert next(changes).type == "MODIFIED"

    lines = [(line.replica, line.text) for line in client.logs(a)]
    assert lines == [(p.split(f"{a}-")[1], f"{p} up") for p in pods]
    worker_1 = list(client.logs(a, replica="Worker-1"))
    assert [line.text for line in worker_1] == [f"{a}-worker-1 up"]

    followed: list[tuple[str, str]] = []
    follower = threading.Thread(
        target=lambda: followed.extend((x.replica, x.text) for x in client.logs(a, follow=True))
    )
    follower.start()
    time.sleep(1.5)
    kubelet.say(ns, f"{a}-worker-1", "later line")
    seen: list[str] = []
    done = client.wait(
        a, timeout=1, conditions=("Running",), callback=lambda j: seen.append(j.name)
    )
    assert done.status.is_true("Running") and seen == [a]
    kubelet.end(ns, f"{a}-worker-0", "Succeeded")
    for other in (f"{a}-ps-0", f"{a}-worker-1"):
        kubelet.end(ns, other, "Succeeded")
    states: list[str] = []
    final = client.wait(
        a, timeout=30, callback=lambda j: states.append(j.status.conditions[-1].type)
    )
    assert final.status.is_true("Succeeded") and client.is_succeeded(a) and not client.is_failed(a)
    assert states[-1] == "Succeeded"
    follower.join(30)
    assert not follower.is_alive()
    assert ("worker-1", "later line") in followed and ("ps-0", f"{a}-ps-0 up") in followed
    events = client.events(a)
    reasons = [e.reason for e in events]
    assert "TFJobCreated" in reasons and "TFJobSucceeded" in reasons
    # one event per pass: the event of the pass that created the pods names them
    assert any("Created" in e.message and f"{a}-worker-0" in e.message for e in events)

    # b fails: wait raises with the job's own failure message
    for pod in _pods(admin, ns, b):
        kubelet.run(ns, pod)
    kubelet.end(ns, f"{b}-worker-1", "Failed", exit_code=3)
    with pytest.raises(JobFailed) as failed:
        client.wait(b, timeout=30)
    message = failed.value.job.status.condition("Failed").message
    assert str(failed.value) == f"TFJob {ns}/{b} failed: {message}"
    assert f"{b}-worker-1" in message and "exit code 3" in message

    # c: suspend deletes its pods, resume recreates them; a wait that times out says so
    _pods(admin, ns, c)
    assert client.suspend(c).spec.run_policy.suspend is True
    wait(lambda: client.get(c).status.is_true("Suspended"), "Suspended")
    wait(lambda: not admin.pods(ns, c), "its pods deleted")
    with pytest.raises(WaitTimeout, match=f"TFJob {ns}/{c}: none of Succeeded after 1s"):
        client.wait(c, timeout=1)
    assert client.resume(c).spec.run_policy.suspend is False
    _pods(admin, ns, c)

    client.delete(c)
    wait(lambda: admin.tfjob(ns, c) is None, "c deleted")
    deleted = [ch for ch in client.watch(name=c, timeout=2)]
    assert deleted == []
    with pytest.raises(JobNotFound, match=f'TFJob "{c}" not found in namespace "{ns}"'):
        client.get(c)


def test_cli_get_logs_wait_delete(
    admin: Api, ns: str, kubelet: KubeletPlayer, control_plane: ControlPlane
) -> None:
    port = free_ports(1)[0]
    chief = Publisher("worker:0", port=port)
    chief.update(document("worker:0", 250, 1000, 0.5, 100.0, 95.0))
    name = unique("cli")
    admin.create_tfjob(ns, manifest(name, port))
    for pod in _pods(admin, ns, name):
        kubelet.run(ns, pod, [f"line of {pod}"])
    wait(lambda: (admin.tfjob(ns, name) or {}).get("status", {}).get("progress"), "progress")
    kubeconfig = control_plane.kubeconfig

    got = taas("get", kubeconfig=kubeconfig, ns=ns)
    assert got.returncode == 0, got.stderr
    header, *rows = got.stdout.splitlines()
    assert header.split() == ["NAME", "STATE", "REASON", "WORKERS", "PS", "PROGRESS", "ETA", "AGE"]
    mine = next(r.split() for r in rows if r.startswith(name + " "))
    assert mine[:6] == [name, "Running", "2", "1", "25%", "1m35s"]
    one = taas("get", name, "-o", "yaml", kubeconfig=kubeconfig, ns=ns)
    assert yaml.safe_load(one.stdout)["status"]["progress"]["percent"] == 25
    single = taas("get", name, kubeconfig=kubeconfig, ns=ns)  # one job: with its replicas
    assert single.returncode == 0, single.stderr
    replicas = single.stdout.split("\n\n", 1)[1].splitlines()
    assert replicas[0].split() == ["REPLICA", "STATE", "RESTARTS", "EXIT", "NODE", "IP"]
    assert [r.split()[:2] for r in replicas[1:]] == [
        [f"{name}/{p}", "Running"] for p in ("ps-0", "worker-0", "worker-1")
    ]

    logs = taas("logs", name, kubeconfig=kubeconfig, ns=ns)
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout.splitlines() == [
        f"[{p}] line of {name}-{p}" for p in ("ps-0", "worker-0", "worker-1")
    ]
    single = taas("logs", name, "--replica", "worker-1", kubeconfig=kubeconfig, ns=ns)
    assert single.stdout == f"line of {name}-worker-1\n"

    waiter = subprocess.Popen(
        [*TAAS, "wait", name, "--timeout", "60", "--kubeconfig", kubeconfig, "-n", ns],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    follow = subprocess.Popen(
        [*TAAS, "logs", name, "-f", "--kubeconfig", kubeconfig, "-n", ns],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert waiter.stdout is not None
    first = waiter.stdout.readline()  # `taas wait` is watching (its first line: the job now)
    time.sleep(1)
    kubelet.say(ns, f"{name}-worker-0", "the end is near")
    time.sleep(1)
    kubelet.end(ns, f"{name}-worker-0", "Succeeded")
    for other in (f"{name}-ps-0", f"{name}-worker-1"):
        kubelet.end(ns, other, "Succeeded")
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, out + err
    assert first == f"TFJob {name}: Running 25% ETA 1m35s\n"
    assert out.splitlines()[-1] == f"TFJob {name}: Succeeded 100% ETA 0s"
    followed, err = follow.communicate(timeout=60)
    assert follow.returncode == 0, err
    assert (
        "[worker-0] the end is near\n" in followed and f"[ps-0] line of {name}-ps-0\n" in followed
    )

    deleted = taas("delete", name, kubeconfig=kubeconfig, ns=ns)
    assert deleted.returncode == 0 and deleted.stdout == f'tfjob.kubeflow.org "{name}" deleted\n'
    again = one_error(taas("delete", name, kubeconfig=kubeconfig, ns=ns))
    assert f'TFJob "{name}" not found in namespace "{ns}"' in again


def test_a_failed_job_exits_1_with_its_own_message(
    admin: Api, ns: str, kubelet: KubeletPlayer, control_plane: ControlPlane
) -> None:
    name = unique("fail")
    admin.create_tfjob(ns, manifest(name))
    for pod in _pods(admin, ns, name):
        kubelet.run(ns, pod)
    kubelet.end(ns, f"{name}-worker-0", "Failed", exit_code=1)
    wait(lambda: condition(admin.tfjob(ns, name), "Failed"), "Failed")
    result = taas("wait", name, kubeconfig=control_plane.kubeconfig, ns=ns)
    assert result.returncode == 1
    assert f"taas: TFJob {ns}/{name} failed: " in result.stderr
    assert f"pod {name}-worker-0, container tensorflow, exit code 1" in result.stderr


def test_bad_paths_are_one_message_and_exit_2(
    control_plane: ControlPlane, ns: str, tmp_path: Path
) -> None:
    kubeconfig = control_plane.kubeconfig
    # a missing job, for every command that names one
    for command in (["get", "nope"], ["logs", "nope"], ["wait", "nope"], ["delete", "nope"]):
        message = one_error(taas(*command, kubeconfig=kubeconfig, ns=ns))
        assert f'TFJob "nope" not found in namespace "{ns}"' in message
    # a file that is not a valid TFJob: the same message taas validate gives, nothing created
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(tfjob("Bad_Name", {"Worker": {}})))
    assert "metadata.name" in one_error(taas("submit", str(bad), kubeconfig=kubeconfig, ns=ns))
    # RBAC refusing the user
    alice = control_plane.kubeconfig_for("alice")
    message = one_error(taas("get", kubeconfig=alice, ns=ns))
    assert 'forbidden: tfjobs.kubeflow.org is forbidden: User "alice" cannot list' in message
    assert "fix: ask a cluster admin for a Role granting 'list' on tfjobs" in message
    with pytest.raises(Forbidden):
        TFJobClient(kubeconfig=alice, namespace=ns).get("x")
    # a broken kubeconfig, a missing one, a context it lacks
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text("apiVersion: v1\nclusters: [this is not: a kubeconfig\n")
    assert f'cannot use kubeconfig "{broken}"' in one_error(
        taas("get", kubeconfig=str(broken), ns=ns)
    )
    missing = one_error(taas("get", kubeconfig=str(tmp_path / "none"), ns=ns))
    assert "does not exist; fix: pass --kubeconfig PATH" in missing
    context = subprocess.run(
        [*TAAS, "get", "--kubeconfig", kubeconfig, "--context", "elsewhere"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert 'has no context "elsewhere"' in one_error(context)
    with pytest.raises(ConfigError):
        TFJobClient(kubeconfig=str(broken))
    # a CA that did not sign the apiserver's certificate: TLS named as such, with its fix
    stranger = CertificateAuthority.create(tmp_path / "stranger-ca")
    wrong_ca = yaml.safe_load(Path(kubeconfig).read_text())
    wrong_ca["clusters"][0]["cluster"]["certificate-authority"] = str(stranger.cert_file)
    (tmp_path / "wrong-ca.kubeconfig").write_text(yaml.safe_dump(wrong_ca))
    message = one_error(taas("get", kubeconfig=str(tmp_path / "wrong-ca.kubeconfig"), ns=ns))
    assert "failed TLS verification: " in message, message
    assert "certificate verify failed" in message
    assert "fix: the kubeconfig's certificate-authority-data" in message
    assert "cannot reach" not in message
    with pytest.raises(Invalid, match=r"metadata\.name"):
        TFJobClient(kubeconfig=kubeconfig, namespace=ns).create(str(bad))


@pytest.fixture(scope="module")
def bare_plane() -> Iterator[ControlPlane]:
    """A control plane without the TFJob CRD."""
    with ControlPlane() as plane:
        yield plane


def test_a_cluster_without_the_crd(bare_plane: ControlPlane, tmp_path: Path) -> None:
    message = one_error(taas("get", kubeconfig=bare_plane.kubeconfig, ns="default"))
    assert (
        "has no TFJob resource (kubeflow.org/v1 tfjobs): the TFJob CRD is not installed" in message
    )
    assert "fix: install the TFJob CRD: kubectl apply --server-side -f" in message
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(manifest("nocrd")))
    assert "the TFJob CRD is not installed" in one_error(
        taas("submit", str(path), kubeconfig=bare_plane.kubeconfig, ns="default")
    )
    with pytest.raises(CrdMissing):
        TFJobClient(kubeconfig=bare_plane.kubeconfig).list()


def test_taas_kubeconfig_gives_a_team_member_their_service_accounts_rights(
    control_plane: ControlPlane, admin: Api, ns: str, tmp_path: Path
) -> None:
    """Issue 44: no documented way to make a kubeconfig from a token for a team member."""
    account = unique("member")
    admin.create(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": account}})
    rules = [{"apiGroups": ["kubeflow.org"], "resources": ["tfjobs"], "verbs": ["get", "list"]}]
    admin.create(
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
        {"metadata": {"name": account}, "rules": rules},
    )
    admin.create(
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
        {
            "metadata": {"name": account},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ns}],
        },
    )
    made = tmp_path / "member.kubeconfig"
    wrote = taas("kubeconfig", account, "-o", str(made), kubeconfig=control_plane.kubeconfig, ns=ns)
    assert wrote.returncode == 0, wrote.stderr
    assert made.stat().st_mode & 0o777 == 0o600
    config = yaml.safe_load(made.read_text())
    assert config["contexts"][0]["context"]["namespace"] == ns
    # the member's own view: their namespace (the context's) and nothing beyond it
    theirs = subprocess.run(
        [*TAAS, "get", "--kubeconfig", str(made)], capture_output=True, text=True, timeout=60
    )
    assert theirs.returncode == 0, theirs.stderr
    elsewhere = one_error(taas("get", kubeconfig=str(made), ns="default"))
    assert f'User "system:serviceaccount:{ns}:{account}" cannot list' in elsewhere
    missing = one_error(taas("kubeconfig", "nobody", kubeconfig=control_plane.kubeconfig, ns=ns))
    assert 'serviceaccounts "nobody" not found' in missing
