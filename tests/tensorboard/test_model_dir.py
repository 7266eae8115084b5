"""Where a TFJob's chief writes its summaries, read as the trainer reads it, and the TensorBoard
objects the operator makes from it (`taas_operator.tensorboard.objects`, pure: no cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from taas.core.settings import DEFAULT_MODEL_DIR as TRAINER_DEFAULT
from taas.core.settings import env_names, flag_names
from taas_operator.api import parse_tfjob
from taas_operator.api.constants import LABEL_JOB_NAME
from taas_operator.tensorboard.objects import (
    DEFAULT_MODEL_DIR,
    MODEL_DIR_ENV,
    MODEL_DIR_FLAGS,
    ModelDirError,
    chief_model_dir,
    desired_tensorboard,
    tensorboard_link,
    tensorboard_request,
)

pytestmark = pytest.mark.fast

IMAGE = "registry.example/tb:1"


def _job(
    replicas: dict[str, dict[str, Any]] | None = None,
    annotation: str | None = "true",
    **container: Any,
) -> Any:
    pod: dict[str, Any] = {
        "containers": [{"name": "tensorflow", "image": "t:1", **container}],
        "volumes": [
            {"name": "shared", "hostPath": {"path": "/srv/runs"}},
            {"name": "scratch", "emptyDir": {}},
        ],
    }
    specs = replicas or {"PS": {"replicas": 1}, "Worker": {"replicas": 2}}
    meta: dict[str, Any] = {"name": "mnist", "namespace": "team", "uid": "u-1"}
    if annotation is not None:
        meta["annotations"] = {"taas.dev/tensorboard": annotation}
    return parse_tfjob(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": meta,
            "spec": {
                "tfReplicaSpecs": {
                    rtype: {**extra, "template": {"spec": pod}} for rtype, extra in specs.items()
                }
            },
        }
    )


def test_the_names_are_the_trainers() -> None:
    """The operator reads model_dir from exactly the flags and variables the trainer does (the
    trainer never imports the operator, nor the operator the trainer: this test ties them)."""
    assert [f"--{name}" for name in MODEL_DIR_FLAGS] == flag_names("model_dir")
    assert list(MODEL_DIR_ENV) == env_names("model_dir")
    assert DEFAULT_MODEL_DIR == TRAINER_DEFAULT


@pytest.mark.parametrize(
    ("container", "path", "source"),
    [
        ({}, "/tmp/taas-model", "the trainer's default"),
        ({"env": [{"name": "TF_LOGDIR", "value": "/srv/runs/a"}]}, "/srv/runs/a", "env TF_LOGDIR"),
        (
            {
                "env": [
                    {"name": "TF_MODEL_DIR", "value": "/b"},
                    {"name": "TAAS_MODEL_DIR", "value": "/c"},
                ]
            },
            "/c",
            "env TAAS_MODEL_DIR",
        ),
        (
            {
                "command": ["python", "t.py", "--logdir", "/d"],
                "env": [{"name": "TF_LOGDIR", "value": "/e"}],
            },
            "/d",
            "flag --logdir",
        ),
        ({"args": ["--model-dir=/f", "--train_dir=/g"]}, "/g", "flag --train_dir"),
        ({"args": ["--", "--model_dir=/h"]}, "/tmp/taas-model", "the trainer's default"),
    ],
)
def test_model_dir_as_the_trainer_reads_it(container: dict, path: str, source: str) -> None:
    found = chief_model_dir(_job(**container))
    assert (found.path, found.source, found.replica) == (path, source, "Worker 0")


def test_the_chief_replica_is_read_first() -> None:
    chief = {"replicas": 1}
    found = chief_model_dir(_job({"Chief": chief, "PS": {}, "Worker": {"replicas": 2}}))
    assert found.replica == "Chief"


def test_request_and_link() -> None:
    assert tensorboard_request(_job()) == "run"
    assert tensorboard_request(_job(annotation="https://tb.example/x")) == "link"
    assert tensorboard_request(_job(annotation="javascript:alert(1)")) is None
    assert tensorboard_request(_job(annotation=None)) is None
    assert tensorboard_link("http://tb.example/") == "http://tb.example/"
    assert tensorboard_link("data:text/html,x") is None


def test_objects_read_the_same_volume_read_only() -> None:
    job = _job(
        env=[{"name": "TF_LOGDIR", "value": "/model/run1"}],
        volumeMounts=[
            {"name": "scratch", "mountPath": "/tmp"},
            {"name": "shared", "mountPath": "/model", "subPath": "mnist"},
        ],
        securityContext={"runAsUser": 1000},
    )
    deployment, service = desired_tensorboard(job, IMAGE)
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == IMAGE and "--logdir=/model/run1" in container["args"]
    # the hostPath narrowed to the model_dir itself (issue 39): /srv/runs + subPath + run1
    assert container["volumeMounts"] == [
        {"name": "shared", "mountPath": "/model/run1", "readOnly": True}
    ]
    assert pod["volumes"] == [
        {"name": "shared", "hostPath": {"path": "/srv/runs/mnist/run1", "type": "Directory"}}
    ]
    for obj in (deployment, service):
        assert obj["metadata"]["name"] == "mnist-tensorboard"
        assert obj["metadata"]["ownerReferences"][0]["uid"] == "u-1"
        # never the job-name label: the job's own pod and service logic must not count them
        assert LABEL_JOB_NAME not in obj["metadata"]["labels"]
    assert LABEL_JOB_NAME not in deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["port"] == 6006


def test_a_remote_model_dir_needs_no_volume() -> None:
    deployment, _ = desired_tensorboard(_job(args=["--model_dir=gs://bucket/run"]), IMAGE)
    pod = deployment["spec"]["template"]["spec"]
    assert pod["volumes"] == [] and "--logdir=gs://bucket/run" in pod["containers"][0]["args"]


@pytest.mark.parametrize(
    ("container", "words"),
    [
        ({}, ["/tmp/taas-model", "the trainer's default", "on no volume", "PersistentVolumeClaim"]),
        (
            {
                "env": [{"name": "TF_LOGDIR", "value": "/tmp/x"}],
                "volumeMounts": [{"name": "scratch", "mountPath": "/tmp"}],
            },
            ["emptyDir volume 'scratch'", "no other pod can read"],
        ),
        ({"env": [{"name": "TF_LOGDIR", "value": "runs"}]}, ["is relative", "absolute path"]),
        (
            {
                "env": [
                    {
                        "name": "TF_LOGDIR",
                        "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}},
                    }
                ]
            },
            ["valueFrom", "give TF_LOGDIR a value"],
        ),
        ({"args": ["--model_dir=$(DIR)"]}, ["refers to a variable"]),
    ],
)
def test_what_cannot_be_served_says_why_and_the_fix(container: dict, words: list[str]) -> None:
    with pytest.raises(ModelDirError) as err:
        desired_tensorboard(_job(**container), IMAGE)
    for word in words:
        assert word in str(err.value)


def test_a_name_too_long_for_a_service() -> None:
    job = _job(args=["--model_dir=gs://b/r"])
    job.metadata.name = "x" * 60
    with pytest.raises(ModelDirError, match="at most 51"):
        desired_tensorboard(job, IMAGE)


def _pod_job(pod: dict[str, Any]) -> Any:
    return parse_tfjob(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {
                "name": "mnist",
                "namespace": "team",
                "uid": "u-1",
                "annotations": {"taas.dev/tensorboard": "true"},
            },
            "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": pod}}}},
        }
    )


def test_the_tensorboard_takes_only_the_log_volume_of_a_privileged_chief() -> None:
    """Issue 29: a chief asking for the host (its namespaces, root, seccomp Unconfined,
    sysctls, tolerations, a privileged container, hostPath `/`) gives its TensorBoard none of
    that: the TensorBoard reads the log volume read-only, as non-root, seccomp RuntimeDefault."""
    chief = {
        "name": "tensorflow",
        "image": "t:1",
        "env": [{"name": "TF_LOGDIR", "value": "/host/srv/runs"}],
        "volumeMounts": [{"name": "root", "mountPath": "/host"}],
        "securityContext": {"privileged": True, "runAsUser": 0},
    }
    pod = {
        "containers": [chief],
        "volumes": [
            {"name": "root", "hostPath": {"path": "/"}},
            {"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}},
        ],
        "hostNetwork": True,
        "hostPID": True,
        "hostIPC": True,
        "shareProcessNamespace": True,
        "serviceAccountName": "admin",
        "securityContext": {
            "runAsUser": 0,
            "runAsGroup": 0,
            "fsGroup": 0,
            "supplementalGroups": [0],
            "seccompProfile": {"type": "Unconfined"},
            "sysctls": [{"name": "kernel.shm_rmid_forced", "value": "0"}],
            "seLinuxOptions": {"type": "spc_t"},
        },
        "tolerations": [{"operator": "Exists"}],
        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
        "affinity": {"nodeAffinity": {}},
        "imagePullSecrets": [{"name": "registry"}],
        "priorityClassName": "system-node-critical",
    }
    deployment, _ = desired_tensorboard(_pod_job(pod), IMAGE)
    spec = deployment["spec"]["template"]["spec"]
    assert spec == {
        "automountServiceAccountToken": False,
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": spec["containers"],
        # the log volume alone, narrowed from `/` to the model_dir (issue 39)
        "volumes": [{"name": "root", "hostPath": {"path": "/srv/runs", "type": "Directory"}}],
    }
    (container,) = spec["containers"]
    assert container["image"] == IMAGE
    assert container["volumeMounts"] == [
        {"name": "root", "mountPath": "/host/srv/runs", "readOnly": True}
    ]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    assert "env" not in container and "envFrom" not in container


def test_the_tensorboard_runs_as_the_chiefs_non_root_user() -> None:
    """It reads what the chief wrote: the chief's user and groups, when they are not root's."""
    chief = {
        "name": "tensorflow",
        "image": "t:1",
        "env": [{"name": "TF_LOGDIR", "value": "/model/run"}],
        "volumeMounts": [{"name": "shared", "mountPath": "/model"}],
    }
    pod = {
        "containers": [chief],
        "volumes": [{"name": "shared", "persistentVolumeClaim": {"claimName": "runs"}}],
        "securityContext": {
            "runAsUser": 1000,
            "runAsGroup": 0,
            "fsGroup": 2000,
            "supplementalGroups": [0, 3000],
            "seccompProfile": {"type": "Unconfined"},
        },
    }
    deployment, _ = desired_tensorboard(_pod_job(pod), IMAGE)
    assert deployment["spec"]["template"]["spec"]["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsUser": 1000,
        "fsGroup": 2000,
        "supplementalGroups": [3000],
    }


@pytest.mark.parametrize(
    ("host", "mount_path", "model_dir", "node_dir"),
    [
        ("/", "/host", "/host", "/"),  # issue 39: the chief's `/` mounted read-only
        ("/", "/host", "/host/srv", "/srv"),  # directly under `/`
        ("/etc", "/cfg", "/cfg/kubernetes", "/etc/kubernetes"),
        ("/var/lib", "/data", "/data/kubelet/pods", "/var/lib/kubelet/pods"),
        ("/var", "/v", "/v/log/pods", "/var/log/pods"),
    ],
)
def test_a_host_path_wider_than_a_model_dir_is_refused(host, mount_path, model_dir, node_dir):
    job = _pod_job(
        {
            "containers": [
                {
                    "name": "tensorflow",
                    "image": "t:1",
                    "env": [{"name": "TF_LOGDIR", "value": model_dir}],
                    "volumeMounts": [{"name": "node", "mountPath": mount_path}],
                }
            ],
            "volumes": [{"name": "node", "hostPath": {"path": host}}],
        }
    )
    with pytest.raises(ModelDirError) as info:
        desired_tensorboard(job, IMAGE)
    assert f"the node's directory {node_dir!r}, too wide a hostPath" in str(info.value)
    assert "fix:" in str(info.value)
