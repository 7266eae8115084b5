"""What of the runner's environment a `taas run` replica sees: like a pod, only its template's
env, what TaaS sets (TF_CONFIG...) and what running Python needs; never the runner's
credentials, unless `--pass-env NAME` or `--inherit-env` says so. Real runner, real replica
processes (plain Python, no TensorFlow)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from taas_operator.local.environment import EnvPolicy, base_env
from tests.local.local_harness import REPO, TAAS, replica, tfjob, write

pytestmark = pytest.mark.timeout(120)

DUMP = "import json, os; print('ENV', json.dumps(dict(os.environ)), flush=True)"
SECRETS = {
    "KUBECONFIG": "/home/me/.kube/admin.conf",
    "AWS_SECRET_ACCESS_KEY": "fake-secret-key",
    "GITHUB_TOKEN": "ghp_fake",
}


def replica_env(tmp_path, *flags: str) -> dict[str, str]:
    """The environment the one replica of a job printed, the runner holding SECRETS."""
    job = tfjob(
        "env",
        {"Worker": replica(DUMP, env=[{"name": "FROM_TEMPLATE", "value": "yes"}])},
    )
    done = subprocess.run(
        [*TAAS, "run", str(write(tmp_path, job)), "--no-color", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, **SECRETS, "LC_TIME": "C", "MY_SETTING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [x for x in done.stdout.splitlines() if " ENV " in x]
    return dict(json.loads(line.split(" ENV ", 1)[1]))


def test_a_replica_gets_its_template_env_and_the_basics_not_the_runners_secrets(
    tmp_path,
) -> None:
    env = replica_env(tmp_path)
    for name in SECRETS:
        assert name not in env, name
    assert "MY_SETTING" not in env
    assert env["FROM_TEMPLATE"] == "yes"
    assert env["JOB_NAME"] == "worker" and env["TASK_INDEX"] == "0"  # what TaaS sets
    assert env["LC_TIME"] == "C"
    assert env["HOME"] == os.environ["HOME"]
    assert set(os.environ["PATH"].split(os.pathsep)) - {""} <= set(env["PATH"].split(os.pathsep))


def test_pass_env_adds_one_variable(tmp_path) -> None:
    env = replica_env(tmp_path, "--pass-env", "KUBECONFIG", "--pass-env", "MY_SETTING")
    assert env["KUBECONFIG"] == SECRETS["KUBECONFIG"] and env["MY_SETTING"] == "1"
    assert "AWS_SECRET_ACCESS_KEY" not in env and "GITHUB_TOKEN" not in env


def test_inherit_env_gives_the_whole_environment(tmp_path) -> None:
    env = replica_env(tmp_path, "--inherit-env")
    for name, value in SECRETS.items():
        assert env[name] == value
    assert env["FROM_TEMPLATE"] == "yes"  # the template still wins over the runner


def test_base_env() -> None:
    runner = {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "VIRTUAL_ENV": "/v", **SECRETS}
    assert base_env(EnvPolicy(), runner) == {
        "PATH": "/bin",
        "HOME": "/h",
        "LC_ALL": "C",
        "VIRTUAL_ENV": "/v",
    }
    assert base_env(EnvPolicy(passed=("GITHUB_TOKEN",)), runner)["GITHUB_TOKEN"] == "ghp_fake"
    assert base_env(EnvPolicy(inherit=True), runner) == runner
