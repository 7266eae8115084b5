"""Kubeflow's Python SDK (`kubeflow-training`, PyPI) in a virtual environment of its own, made
once and kept under `<cache>/venvs/`: the SDK pins `kubernetes<36`, which TaaS's own environment
need not share, and a user runs it from theirs.

    sdk_python() -> Path     # that environment's python (created, and the SDK installed, once)
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

from taas_controlplane.build.binaries import cache_root

SDK = "kubeflow-training==1.9.4"


def sdk_python() -> Path:
    venv = cache_root() / "venvs" / SDK.replace("==", "-")
    python = venv / "bin" / "python"
    done = venv / ".installed"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with (venv.parent / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
            subprocess.run(
                [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", SDK],
                check=True,
                timeout=600,
            )
            done.touch()
    return python
