"""Status text someone else wrote never reaches a terminal or /metrics raw: a condition holding
terminal escape sequences (clear the screen, set the window title, ring the bell) is shown
escaped by `taas get` and `taas wait`, and never reaches the running operator's /metrics labels
(their state is one of `api.state`'s words, whatever the conditions say).

The jobs name another controller (`runPolicy.managedBy`), so the operator caches them but leaves
their status as the test wrote it (through the status subresource, as any writer of
tfjobs/status could).
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.api.text import printable
from taas_operator.processes import free_ports
from tests.harness.operator_run import (
    Api,
    StartOperator,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]
TAAS = [sys.executable, "-m", "taas_operator.cli"]
HOSTILE = "\x1b[2J\x1b]0;pwned\x07"
SHOWN = "\\x1b[2J\\x1b]0;pwned\\x07"
NOW = "2026-01-01T00:00:00Z"


def test_printable() -> None:
    assert printable(HOSTILE) == SHOWN
    assert printable("two\nlines\tand\r") == "two\\nlines\\tand\\r"
    assert printable("\x9b31m \u202eevil \x7f") == "\\x9b31m \\u202eevil \\x7f"
    assert printable("plain: ünïcode, 100% — ok") == "plain: ünïcode, 100% — ok"


def _job_with_status(admin: Api, ns: str, name: str, conditions: list[dict[str, str]]) -> None:
    admin.create_tfjob(ns, tfjob(name, {"Worker": {}}, runPolicy={"managedBy": "example.com/x"}))
    path = f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs/{name}/status"
    stamped = [{"lastUpdateTime": NOW, "lastTransitionTime": NOW, **c} for c in conditions]
    admin.merge_patch(path, {"status": {"conditions": stamped}})


def _taas(control_plane: ControlPlane, ns: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*TAAS, *args, "--kubeconfig", control_plane.kubeconfig, "-n", ns],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_escape_sequences_in_status_are_shown_escaped(
    admin: Api, start_operator: StartOperator, control_plane: ControlPlane
) -> None:
    ns = new_namespace(admin, "hostile")
    (port,) = free_ports(1)
    start_operator(ns, args=(f"--metrics-port={port}",))
    state, failed = unique("state"), unique("failed")
    evil = {"type": "Running", "status": "False", "reason": f"Evil{HOSTILE}"}
    _job_with_status(admin, ns, state, [evil, {"type": f"Evil{HOSTILE}", "status": "True"}])
    _job_with_status(
        admin,
        ns,
        failed,
        [{"type": "Failed", "status": "True", "reason": "Bad", "message": f"boom{HOSTILE}"}],
    )

    got = _taas(control_plane, ns, "get")
    assert got.returncode == 0, got.stderr
    # the reason is shown (REASON), escaped; an unknown condition type is no state at all
    assert f"Evil{SHOWN}" in got.stdout and "\x1b" not in got.stdout and "\x07" not in got.stdout

    waited = _taas(control_plane, ns, "wait", failed)
    assert waited.returncode == 1
    assert f"taas: TFJob {ns}/{failed} failed: boom{SHOWN}" in waited.stderr
    assert "\x1b" not in waited.stderr + waited.stdout

    def scrape() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            return str(answer.read().decode())

    def shown() -> str | None:
        try:
            text = scrape()
        except OSError:
            return None
        return text if f'job_namespace="{ns}"' in text else None

    text = wait(shown, "the job in /metrics")
    line = f'taas_operator_jobs{{job_namespace="{ns}",state="Waiting"}} 1.0'
    assert line in text, [x for x in text.splitlines() if ns in x]
    assert "Evil" not in text and "\x1b" not in text and "\x07" not in text


def test_a_recreation_reason_is_escaped_in_its_metrics_label() -> None:
    """The pod failure reason the operator counts recreations by (from pod status, which the
    kubelet or anyone with pods/status writes) is a label value: escaped too."""
    from prometheus_client import generate_latest

    from taas_operator.controller import metrics

    ns = unique("reasons")
    after = {"recreations": {"p-worker-0": {"count": 2, "lastReason": f"OOM{HOSTILE}"}}}
    metrics.status_written(ns, {}, after)
    text = generate_latest(metrics.REGISTRY).decode()
    label = "OOM" + SHOWN.replace("\\", "\\\\")
    assert f'job_namespace="{ns}",reason="{label}"}} 2.0' in text
    assert "\x1b" not in text and "\x07" not in text
