"""Install a CRD on a test control plane and wait until the apiserver serves it.

    install_crd(plane, source, name="tfjobs.kubeflow.org")   # source: a Path or YAML text
    wait_established(plane, name)                            # after applying it yourself

`kubectl wait --for=condition=Established` fails at once (`.status.conditions accessor error`)
instead of waiting when it looks before the apiserver wrote any condition, which the generated
TFJob CRD (the pod template's whole schema) makes likely; this polls the condition instead.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

ESTABLISHED = '{.status.conditions[?(@.type=="Established")].status}'


def install_crd(
    plane: Any, source: Path | str, name: str = "tfjobs.kubeflow.org", timeout: float = 60
) -> None:
    """Apply (server-side, taking over fields) and wait until Established."""
    if isinstance(source, Path):
        plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(source))
    else:
        plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=source)
    wait_established(plane, name, timeout)


def wait_established(plane: Any, name: str, timeout: float = 60) -> None:
    """Wait until the CRD `name` is Established."""
    deadline = time.monotonic() + timeout
    while True:
        got = plane.kubectl("get", f"crd/{name}", "-o", f"jsonpath={ESTABLISHED}", check=False)
        if got.stdout.strip() == "True":
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"CRD {name} not Established after {timeout}s: {got.stderr}")
        time.sleep(0.2)
