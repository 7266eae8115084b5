"""`taas-controlplane env` and the kubectl it builds: what a user's `eval` gets on a fresh machine.

The env tests point TAAS_CACHE_DIR at a temporary cache holding stand-in helm and kubectl
executables at the exact paths `binaries.binary_path` gives (so no Go build runs), and play a
running one-node cluster the way `Cluster` marks one: `node/cluster.lock` held with flock and
`node/last-run.json` naming its directory. The kubectl test builds the real one (cached after
the first time; `.ci/run` builds it before the tests) and talks to the real control plane.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from taas_controlplane.build import binaries
from taas_controlplane.cluster.registry import (
    RegistryError,
    hosts_dir,
    push_files,
    trust_files,
    write_credentials,
)
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_controlplane.node.host_network import NetworkConfig
from taas_controlplane.node.host_scrub import RunRecord
from taas_controlplane.userenv import USER_TOOLS

BIN = str(Path(sys.executable).parent)  # where `taas-controlplane` is installed


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cache with stand-in helm and kubectl, each printing its own name."""
    root = tmp_path / "cache"
    monkeypatch.setenv("TAAS_CACHE_DIR", str(root))
    for name in USER_TOOLS:
        path = binaries.binary_path(name)
        path.parent.mkdir(parents=True)
        path.write_text(f"#!/bin/sh\necho {name} from the cache\n")
        path.chmod(0o755)
    yield root


def _shell(script: str, path: str = f"{BIN}:/usr/bin:/bin") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PATH"] = path
    return subprocess.run(
        ["bash", "-e", "-c", script], env=env, capture_output=True, text=True, timeout=60
    )


def test_eval_puts_the_built_helm_and_kubectl_first_on_path(cache: Path) -> None:
    done = _shell('eval "$(taas-controlplane env)"; helm; kubectl; echo "KUBECONFIG=$KUBECONFIG"')
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "helm from the cache",
        "kubectl from the cache",
        "KUBECONFIG=",  # no cluster runs: left as it was
    ]
    printed = _shell("taas-controlplane env").stdout
    assert f"{binaries.binary_path('kubectl').parent}" in printed
    assert "no one-node cluster runs here" in printed


def test_a_running_cluster_sets_kubeconfig_and_its_registry_and_a_killed_one_does_not(
    cache: Path, tmp_path: Path
) -> None:
    node = cache / "node"
    node.mkdir()
    run_dir = tmp_path / "taas node run"  # a space: the printed path must be quoted
    kubeconfig = run_dir / "controlplane" / "admin.kubeconfig"
    kubeconfig.parent.mkdir(parents=True)
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    record = RunRecord(directory=run_dir, network=NetworkConfig(), sysctls={})
    (node / "last-run.json").write_text(record.model_dump_json())
    ca = tmp_path / "ca.crt"
    ca.write_text("a CA\n")
    certs = trust_files(hosts_dir(run_dir), "10.244.0.1:5000", ca)  # what the registry writes
    _, auth = write_credentials(run_dir / "registry", "127.0.0.1:5001")
    script = (
        'eval "$(taas-controlplane env)"; echo "$KUBECONFIG"; echo "$TAAS_REGISTRY"; '
        'echo "$TAAS_REGISTRY_PUSH"; echo "$TAAS_REGISTRY_CERT_DIR"; echo "$REGISTRY_AUTH_FILE"'
    )
    with (node / "cluster.lock").open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what `cluster up` holds while it runs
        running = _shell(script)
        assert running.returncode == 0, running.stderr
        assert running.stdout.splitlines() == [
            str(kubeconfig), "10.244.0.1:5000", "127.0.0.1:5001", str(certs), str(auth),
        ]  # fmt: skip
        assert (certs / "ca.crt").read_text() == "a CA\n"
        # env only tests the lock: the cluster still holds it afterwards
        with pytest.raises(BlockingIOError), (node / "cluster.lock").open() as other:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    killed = _shell(script)  # the record stays behind, the lock is free
    assert killed.returncode == 0 and killed.stdout.split() == [], killed.stderr


def test_images_push_finds_the_running_registrys_push_side_and_refuses_its_pull_side(
    cache: Path, tmp_path: Path
) -> None:
    """`images --push` to the running cluster's push side gets its CA and credentials; to its
    pull side (read-only) a refusal naming the push side; elsewhere, nothing of the cluster's."""
    node = cache / "node"
    node.mkdir()
    run_dir = tmp_path / "run"
    record = RunRecord(directory=run_dir, network=NetworkConfig(), sysctls={})
    (node / "last-run.json").write_text(record.model_dump_json())
    ca = tmp_path / "ca.crt"
    ca.write_text("a CA\n")
    certs = trust_files(hosts_dir(run_dir), "10.244.0.1:5000", ca)
    _, auth = write_credentials(run_dir / "registry", "127.0.0.1:5001")
    with (node / "cluster.lock").open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert push_files("127.0.0.1:5001/taas") == (certs, auth)
        assert push_files("registry.example.com/taas") == (None, None)
        with pytest.raises(
            RegistryError, match=r"pull side, read-only .* push to 127\.0\.0\.1:5001"
        ):
            push_files("10.244.0.1:5000/taas")
    assert push_files("127.0.0.1:5001/taas") == (None, None)  # none runs


def test_missing_go_prints_nothing_to_eval_and_says_why(tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty), "TAAS_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "taas_controlplane", "env"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Go toolchain not found on PATH" in done.stderr


@pytest.mark.controlplane
@pytest.mark.builds("kubectl")
def test_built_kubectl_is_the_clusters_version_and_talks_to_it(
    control_plane: ControlPlane,
) -> None:
    kubectl = str(binaries.ensure("kubectl"))
    version = json.loads(
        subprocess.run(
            [kubectl, "version", "--client", "-o", "json"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    )
    assert version["clientVersion"]["gitVersion"] == binaries.KUBERNETES_VERSION
    names = subprocess.run(
        [kubectl, "--kubeconfig", control_plane.kubeconfig, "get", "ns", "-o", "name"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert "namespace/default" in names
