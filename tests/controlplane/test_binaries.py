"""Bad input to the binary builder: no Go, an unknown binary. One clear message, never a hang."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _build(tmp_path: Path, *names: str, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path, "TAAS_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "taas_controlplane", "build", *names],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_missing_go_says_what_to_install(tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    result = _build(tmp_path, "etcd", path=str(empty))
    assert result.returncode == 1
    assert "Go toolchain not found on PATH" in result.stderr
    assert "install it" in result.stderr and "1.24" in result.stderr
    assert not (tmp_path / "cache" / "bin").exists() or not any(
        p.name.startswith("etcd-") and not p.name.endswith(".partial")
        for p in (tmp_path / "cache" / "bin").iterdir()
    )


def test_too_old_go_is_named(tmp_path: Path) -> None:
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    go = fake / "go"
    go.write_text("#!/bin/sh\necho go1.19.2\n")
    go.chmod(0o755)
    result = _build(tmp_path, "etcd", path=f"{fake}:/usr/bin:/bin")
    assert result.returncode == 1
    assert "go1.19.2" in result.stderr and "Go >= 1.24 is needed" in result.stderr


def test_unknown_binary_is_named(tmp_path: Path) -> None:
    result = _build(tmp_path, "kube-dashboard", path=os.environ["PATH"])
    assert result.returncode == 1
    assert "unknown binary 'kube-dashboard'" in result.stderr and "kube-apiserver" in result.stderr
