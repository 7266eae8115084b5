"""`taas validate`, `taas render`, `--help`, and the input errors of every command: each bad
input gives one clear message on stderr and exit code 2 (subprocesses of the real CLI)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml

from tests.local.local_harness import REPO, TAAS, one_error, replica, run_taas, tfjob, write

pytestmark = pytest.mark.timeout(120)

GOOD = tfjob("demo", {"PS": replica("pass"), "Worker": replica("pass", replicas=2)})


@pytest.mark.parametrize("command", ["run", "validate", "render"])
def test_missing_file(command: str) -> None:
    err = one_error(run_taas(command, "no/such/job.yaml"))
    assert 'the path "no/such/job.yaml" does not exist' in err


@pytest.mark.parametrize("command", ["run", "validate", "render"])
def test_invalid_yaml(tmp_path, command: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: TFJob\nmetadata:\n  name: x\n spec: [\n")
    err = one_error(run_taas(command, str(path)))
    assert f"{path}: invalid YAML at line" in err


@pytest.mark.parametrize("command", ["run", "validate", "render"])
def test_spec_error_names_the_field(tmp_path, command: str) -> None:
    bad = tfjob("demo", {"Worker": replica("pass", replicas=-1, restart_policy="Sometimes")})
    err = one_error(run_taas(command, str(write(tmp_path, bad))))
    assert 'The TFJob "demo" is invalid:' in err
    assert '* spec.tfReplicaSpecs.Worker.restartPolicy: Unsupported value: "Sometimes"' in err
    # Like the apiserver: after a schema error the CEL rules (replicas >= 0) wait, and say so.
    assert "* <nil>: Invalid value: null: some validation rules were not checked" in err
    fixed = tfjob("demo", {"Worker": replica("pass", replicas=-1)})
    err = one_error(run_taas(command, str(write(tmp_path, fixed, name="fixed.yaml"))))
    assert "* spec.tfReplicaSpecs[Worker].replicas: " in err


def test_other_kinds_are_skipped_with_a_note_and_no_tfjob_is_an_error(tmp_path) -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}
    result = run_taas("validate", str(write(tmp_path, config_map, GOOD)))
    assert result.returncode == 0, result.stderr
    assert "skipping ConfigMap/cm: taas runs TFJobs (kubeflow.org/v1) only" in result.stderr
    assert result.stdout.startswith("tfjob.kubeflow.org/demo valid (namespace default; ")
    assert result.stdout.count("\n") == 1  # one line: the job, and its size in etcd
    err = one_error(run_taas("validate", str(write(tmp_path, config_map, name="cm.yaml"))))
    assert "no TFJob found (found ConfigMap/cm)" in err


def test_namespace_mismatch_is_refused_like_kubectl(tmp_path) -> None:
    job = {**GOOD, "metadata": {"name": "demo", "namespace": "a"}}
    err = one_error(run_taas("validate", str(write(tmp_path, job)), "--namespace", "b"))
    assert 'does not match the namespace "b"' in err and "--namespace=a" in err


def test_two_file_arguments_are_a_usage_error(tmp_path) -> None:
    path = str(write(tmp_path, GOOD))
    one_error(run_taas("validate", path, "-f", path))
    usage = run_taas("validate")
    assert usage.returncode == 2 and "no file given" in usage.stderr


def test_run_refuses_a_pod_it_cannot_start_before_starting_anything(tmp_path) -> None:
    """...and leaves nothing behind (not even the job's private progress directory)."""
    spec = replica("pass")
    del spec["template"]["spec"]["containers"][0]["command"]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    path = str(write(tmp_path, tfjob("demo", {"Worker": spec})))
    done = subprocess.run(
        [*TAAS, "run", path],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    err = one_error(done)
    assert "pod demo-worker-0, container tensorflow: command is not set" in err
    assert list(scratch.iterdir()) == []


def test_validate_reads_stdin() -> None:
    result = run_taas("validate", "-", input=yaml.safe_dump(GOOD))
    assert result.returncode == 0 and "tfjob.kubeflow.org/demo valid" in result.stdout


def test_render_prints_what_the_operator_creates(tmp_path) -> None:
    path = write(tmp_path, GOOD)
    result = run_taas("render", str(path), "-n", "team", "--cluster-domain", "cluster.local")
    assert result.returncode == 0, result.stderr
    docs = list(yaml.safe_load_all(result.stdout))
    assert [d["kind"] for d in docs] == ["Pod"] * 3 + ["Service"] * 3 + ["NetworkPolicy"]
    assert [d["metadata"]["name"] for d in docs[:3]] == [
        "demo-ps-0",
        "demo-worker-0",
        "demo-worker-1",
    ]
    env = {e["name"]: e["value"] for e in docs[1]["spec"]["containers"][0]["env"]}
    assert json.loads(env["TF_CONFIG"])["cluster"]["ps"] == [
        "demo-ps-0.team.svc.cluster.local:2222"
    ]
    assert all(d["metadata"]["namespace"] == "team" for d in docs)
    no_policy = run_taas("render", str(path), "--no-network-policy")
    assert "NetworkPolicy" not in no_policy.stdout
    # The operator's default --node-lost-toleration-seconds: 30 s on a lost node, not 300 s.
    assert [(t["key"], t["tolerationSeconds"]) for t in docs[0]["spec"]["tolerations"]] == [
        ("node.kubernetes.io/not-ready", 30),
        ("node.kubernetes.io/unreachable", 30),
    ]


def test_help_reads_like_kubectl() -> None:
    top = run_taas("--help")
    assert top.returncode == 0
    for word in ("run", "validate", "render", "examples:"):
        assert word in top.stdout
    run_help = run_taas("run", "--help")
    assert "taas run examples/mnist/async.yaml" in run_help.stdout
    assert "-f FILE, --filename FILE" in run_help.stdout
    assert "--logs-dir" in run_help.stdout and "exit status" in run_help.stdout


def test_console_script_is_installed() -> None:
    script = shutil.which("taas")
    assert script is not None
    result = subprocess.run(
        [script, "validate", "-"],
        input=yaml.safe_dump(GOOD),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
