"""`taas submit PROGRAM.py` and `TFJobClient.create_job` on the real apiserver: the TFJob and the
ConfigMap holding the program, owned by that TFJob (its uid: the garbage collector, which this
control plane does not run, deletes the ConfigMap with the job); a ConfigMap that cannot be made
(its name taken, RBAC refusing it) is refused before any TFJob is made; a name taken is one
message naming `--name`. No operator runs: nothing here needs pods.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.client import AlreadyExists, TFJobClient
from tests.harness.operator_run import Api, new_namespace, unique

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]
TAAS = [sys.executable, "-m", "taas_operator.cli"]
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "linear_regression" / "linear_regression.py"
CONFIGMAPS = "/api/v1/namespaces/{ns}/configmaps"


@pytest.fixture(scope="module")
def ns(admin: Api) -> str:
    return new_namespace(admin, "submit")


def program(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name.replace('-', '_')}.py"
    path.write_text(EXAMPLE.read_text())
    return path


def submit(*args: str, kubeconfig: str, ns: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*TAAS, "submit", "--kubeconfig", kubeconfig, "-n", ns, *args],  # ARGS after `--` last
        capture_output=True,
        text=True,
        timeout=60,
    )


def config_map(admin: Api, ns: str, name: str) -> dict[str, Any] | None:
    return admin.find(f"{CONFIGMAPS.format(ns=ns)}/{name}")


def assert_owned(admin: Api, ns: str, job: dict[str, Any], path: Path) -> None:
    """The ConfigMap `<job>-program` holds the file and is owned by this TFJob's uid."""
    name = job["metadata"]["name"]
    held = config_map(admin, ns, f"{name}-program")
    assert held is not None
    assert held["data"] == {path.name: path.read_text()}
    assert held["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "name": name,
            "uid": job["metadata"]["uid"],
        }
    ]
    volumes = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["volumes"]
    assert volumes == [{"name": "program", "configMap": {"name": f"{name}-program"}}]


def test_submit_a_program_makes_the_job_and_its_owned_config_map(
    admin: Api, control_plane: ControlPlane, ns: str, tmp_path: Path
) -> None:
    name = unique("prog")
    path = program(tmp_path, name)
    done = submit(
        str(path), "--workers", "2", "--ps", "1", "--gpus-per-worker", "1", "--detach",
        "--env", "TF_MAX_STEPS=400", "--", "--lr", "0.1",
        kubeconfig=control_plane.kubeconfig, ns=ns,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"tfjob.kubeflow.org/{name} created (namespace {ns})",
        f"configmap/{name}-program created (the program, owned by the TFJob)",
    ]
    job = admin.tfjob(ns, name)
    assert job is not None
    specs = job["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"PS": 1, "Worker": 2}
    worker = specs["Worker"]["template"]["spec"]["containers"][0]
    assert worker["command"] == ["python", f"/opt/taas/program/{path.name}", "--lr", "0.1"]
    assert worker["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    assert_owned(admin, ns, job, path)


def test_the_python_client_creates_the_same(
    admin: Api, control_plane: ControlPlane, ns: str, tmp_path: Path
) -> None:
    name = unique("py")
    path = program(tmp_path, name)
    client = TFJobClient(kubeconfig=control_plane.kubeconfig, namespace=ns)
    job = client.create_job(
        train_file=path,
        num_workers=2,
        num_ps_replicas=1,
        resources_per_worker={"cpu": "1", "memory": "1Gi"},
        env={"TF_MAX_STEPS": "400"},
    )
    assert (job.name, job.namespace) == (name, ns)
    stored = admin.tfjob(ns, name)
    assert stored is not None and stored["metadata"]["uid"] == job.metadata.uid
    assert_owned(admin, ns, stored, path)
    with pytest.raises(AlreadyExists, match=r"fix: delete it first .* another name$"):
        client.create_job(train_file=path)


def test_a_config_map_made_in_advance_is_refused_before_any_job(
    admin: Api, control_plane: ControlPlane, ns: str, tmp_path: Path
) -> None:
    """Issue 39: someone made `<job>-program` in advance (a program of theirs). Before, the
    TFJob was made first and its first pod could mount that ConfigMap before `taas submit`
    noticed; now the ConfigMap is made first, so no TFJob is made at all, the other ConfigMap
    is untouched, and the message names it and the fix."""
    name = unique("taken")
    path = program(tmp_path, name)
    other = {"metadata": {"name": f"{name}-program"}, "data": {"keep": "me"}}
    admin.create(CONFIGMAPS.format(ns=ns), other)
    done = submit(str(path), "--detach", kubeconfig=control_plane.kubeconfig, ns=ns)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"configmaps '{name}-program' already exists and taas submit did not make it" in (
        done.stderr
    )
    assert "fix:" in done.stderr
    assert admin.tfjob(ns, name) is None  # never created
    held = config_map(admin, ns, f"{name}-program")
    assert held is not None and held["data"] == {"keep": "me"}


def test_a_user_who_may_not_create_config_maps(
    admin: Api, control_plane: ControlPlane, ns: str, tmp_path: Path
) -> None:
    """RBAC grants TFJobs but not ConfigMaps: refused with the RBAC fix, no TFJob left."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "tfjobs-only"},
        "rules": [
            {
                "apiGroups": ["kubeflow.org"],
                "resources": ["tfjobs"],
                "verbs": ["create", "get", "delete"],
            }
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "bob-tfjobs-only"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tfjobs-only"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}],
    }
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}"
    admin.create(f"{rbac}/roles", role)
    admin.create(f"{rbac}/rolebindings", binding)
    name = unique("rbac")
    bob = control_plane.kubeconfig_for("bob")
    done = submit(str(program(tmp_path, name)), "--detach", kubeconfig=bob, ns=ns)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "forbidden" in done.stderr and "'create' on configmaps" in done.stderr
    assert admin.tfjob(ns, name) is None  # the ConfigMap is made first: no TFJob was made


def test_a_name_taken_names_the_flag(
    admin: Api, control_plane: ControlPlane, ns: str, tmp_path: Path
) -> None:
    name = unique("twice")
    path = program(tmp_path, name)
    first = submit(str(path), "--detach", kubeconfig=control_plane.kubeconfig, ns=ns)
    assert first.returncode == 0, first.stderr
    job = admin.tfjob(ns, name)
    again = submit(str(path), "--detach", kubeconfig=control_plane.kubeconfig, ns=ns)
    assert again.returncode == 2
    assert f'TFJob "{name}" already exists in namespace "{ns}"' in again.stderr
    assert "or give the new one another --name" in again.stderr
    assert job is not None and admin.tfjob(ns, name)["metadata"]["uid"] == job["metadata"]["uid"]
    assert_owned(admin, ns, job, path)  # the first job's ConfigMap, untouched
