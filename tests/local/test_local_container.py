"""From an engine-built pod manifest to the local process: env, fieldRefs, args, notes.

Pure: the pods come from the operator's own `desired_pod` with a 127.0.0.1 host strategy.
"""

from __future__ import annotations

import json
import sys

import pytest

from taas_operator.api import parse_tfjob
from taas_operator.documents import InputError
from taas_operator.local.container import launch_spec
from taas_operator.planner import BuildOptions, desired_pod

PORTS = {("ps", 0): 40001, ("worker", 0): 40002, ("worker", 1): 40003}
OPTIONS = BuildOptions(hosts=lambda t, i, port: f"127.0.0.1:{PORTS[(t, i)]}")


def job(container: dict, replicas: dict[str, int] | None = None):
    specs = {
        rtype: {"replicas": n, "template": {"spec": {"containers": [dict(container)]}}}
        for rtype, n in (replicas or {"PS": 1, "Worker": 2}).items()
    }
    return parse_tfjob(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {"name": "mnist", "namespace": "team", "labels": {"app": "x"}},
            "spec": {"tfReplicaSpecs": specs},
        }
    )


BASE = {"name": "tensorflow", "image": "example/img:1", "command": ["python", "train.py"]}


def test_cluster_env_points_at_local_ports_and_args_are_expanded() -> None:
    container = {
        **BASE,
        "args": ["--ps_hosts=$(PS_HOSTS)", "--job_name=$(JOB_NAME)", "--task=$(TASK_INDEX)"],
    }
    launch = launch_spec(desired_pod(job(container), "Worker", 1, OPTIONS), base={})
    assert launch.argv == [
        sys.executable,
        "train.py",
        "--ps_hosts=127.0.0.1:40001",
        "--job_name=worker",
        "--task=1",
    ]
    assert launch.env["WORKER_HOSTS"] == "127.0.0.1:40002,127.0.0.1:40003"
    config = json.loads(launch.env["TF_CONFIG"])
    assert config["cluster"] == {
        "ps": ["127.0.0.1:40001"],
        "worker": ["127.0.0.1:40002", "127.0.0.1:40003"],
    }
    assert config["task"] == {"type": "worker", "index": 1}


def test_env_values_expand_earlier_entries_and_field_refs_resolve() -> None:
    container = {
        **BASE,
        "env": [
            {"name": "A", "value": "a"},
            {"name": "B", "value": "$(A)-$(LATER)-$$(A)"},
            {"name": "LATER", "value": "l"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        ],
        "args": ["$(POD)", "$(NS)", "$(NODE)", "$(HOME_NOT_IN_CONTAINER_ENV)"],
    }
    launch = launch_spec(
        desired_pod(job(container), "PS", 0, OPTIONS), base={"HOME": "/h", "PATH": "/x"}
    )
    env = launch.env
    assert env["B"] == "a-$(LATER)-$(A)"  # only entries defined before, as the kubelet does
    assert (env["POD"], env["NS"], env["IP"]) == ("mnist-ps-0", "team", "127.0.0.1")
    assert "NODE" not in env and "PW" not in env
    assert launch.argv[2:] == ["mnist-ps-0", "team", "$(NODE)", "$(HOME_NOT_IN_CONTAINER_ENV)"]
    assert env["HOME"] == "/h"  # the machine's environment is inherited underneath
    assert env["PATH"].split(":")[:2] == [sys.executable.rsplit("/", 1)[0], "/x"]
    assert len(launch.notes) == 2
    assert any("spec.nodeName" in n and "NODE" in n for n in launch.notes)
    assert any("secretKeyRef" in n and "PW" in n for n in launch.notes)


def test_working_dir_is_used_and_missing_one_is_an_error(tmp_path) -> None:
    pod = desired_pod(job({**BASE, "workingDir": str(tmp_path)}), "PS", 0, OPTIONS)
    assert launch_spec(pod).cwd == str(tmp_path)
    pod = desired_pod(job({**BASE, "workingDir": "/nonexistent/app"}), "PS", 0, OPTIONS)
    with pytest.raises(InputError, match="workingDir '/nonexistent/app' does not exist"):
        launch_spec(pod)


def test_missing_command_names_the_fix() -> None:
    container = {"name": "tensorflow", "image": "example/img:1", "args": ["x"]}
    pod = desired_pod(job(container), "PS", 0, OPTIONS)
    with pytest.raises(InputError, match=r"command is not set.*example/img:1.*Fix: set command"):
        launch_spec(pod)


def test_unknown_executable_is_an_error() -> None:
    pod = desired_pod(job({**BASE, "command": ["no-such-binary-xyz"]}), "PS", 0, OPTIONS)
    with pytest.raises(InputError, match="'no-such-binary-xyz' not found on PATH"):
        launch_spec(pod)
