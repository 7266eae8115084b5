"""The docs' one-node cluster block, run as written on the one-node cluster.

The block is the one after `<!-- runs: tests/e2e/test_readme_cluster.py -->` in README.md or
docs/*.md (docs/deploy.md today): what a user types "in another shell" once `taas-controlplane
cluster up --images` runs. It runs here verbatim, in bash with `-e -o pipefail`, from the
repository's root, in an environment without KUBECONFIG: its first line,
`eval "$(taas-controlplane env)"`, must find the project's helm and kubectl and the running
cluster's kubeconfig by itself. The cluster is the session's (`cluster`), with the operator and
trainer images imported as `--images` imports them. The block installs the chart as release
`taas` in `taas-system`, so this test is a `chart_lifecycle` one (it runs before the session's
own operator is installed) and uninstalls the release and deletes its namespace `demo` after.
One line is added after the block, `command -v helm kubectl`, to prove the block used the
binaries built into the cache and not whatever the machine has.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from taas_controlplane.build.binaries import cache_root
from taas_controlplane.cluster.cluster import Cluster
from tests.harness.markdown_blocks import block_run_by
from tests.harness.real_cluster import OPERATOR_NS, RELEASE, REPO, helm

pytestmark = [
    pytest.mark.node,
    pytest.mark.chart_lifecycle,
    pytest.mark.tensorflow,
    pytest.mark.slow,
    pytest.mark.timeout(1800),
]


def test_the_docs_cluster_block_runs_as_written(
    cluster: Cluster, operator_image: str, trainer_image: str
) -> None:
    block = block_run_by("tests/e2e/test_readme_cluster.py")
    assert block.startswith('eval "$(taas-controlplane env)"')
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PATH"] = f"{Path(sys.executable).parent}:{os.environ['PATH']}"  # the venv, as activated
    try:
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block + "command -v helm kubectl\n"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
        )
        assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        lines = done.stdout.splitlines()
        helm_path, kubectl_path = lines[-2:]
        for path in (helm_path, kubectl_path):
            assert Path(path).is_relative_to(cache_root() / "bin"), lines[-2:]
        assert re.search(r"^mnist-async-worker-0\s+0/1\s+Completed\s", done.stdout, re.M), (
            done.stdout
        )
        accuracy = re.search(r"test accuracy: ([0-9.]+)", done.stdout)
        assert accuracy and float(accuracy.group(1)) > 0.9, done.stdout
    finally:
        cluster.kubectl("delete", "namespace", "demo", "--wait", "--timeout=300s", check=False)
        helm(cluster, "uninstall", RELEASE, "--namespace", OPERATOR_NS, "--wait", check=False)
