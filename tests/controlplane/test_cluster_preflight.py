"""`taas-controlplane cluster up` refuses clearly, before touching the host, where it cannot run.

Not being root is simulated (os.geteuid patched): this machine's Python lives under /root
(mode 0700), so no other user can run it here; everything else is the real command.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from taas_controlplane.__main__ import main


def _bridge_exists(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


def test_cluster_up_without_root_says_so_and_creates_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    existed = _bridge_exists("taas0")
    run_dirs = set(Path("/tmp").glob("taas-node-*"))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert main(["cluster", "up"]) == 1
    err = capsys.readouterr().err
    assert "needs root" in err and "sudo" in err
    assert "Traceback" not in err
    assert _bridge_exists("taas0") == existed
    assert set(Path("/tmp").glob("taas-node-*")) == run_dirs
