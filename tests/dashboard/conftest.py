"""Fixtures for the dashboard tests: the TFJob CRD on the session's control plane, an admin
client, the operator per test namespace, a headless Chromium.

Real: kube-apiserver + etcd (tests/conftest.py), the TaaS operator (`taas operator`), RBAC,
the dashboard server, Chromium. Not running: a kubelet. Tests play it by writing pod status
(pods/status), as tests/operator does; pod logs need a kubelet, so the log-streaming browser
test uses a local run (`taas run --dashboard`), whose replicas are real processes.
Screenshots are saved under $TAAS_ARTIFACTS (default: <tmp>/taas-artifacts), printed at the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from tests.crds import install_crd
from tests.dashboard.dashboard_harness import artifacts_dir, launch_chromium
from tests.harness.operator_run import Api, OperatorProcess, launch_operator

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml"


@pytest.fixture(scope="session")
def tfjob_crd(control_plane: ControlPlane) -> Path:
    install_crd(control_plane, CRD)
    return CRD


@pytest.fixture(scope="session")
def admin(control_plane: ControlPlane, tfjob_crd: Path) -> Api:
    return Api(control_plane.kubeconfig)


@pytest.fixture
def operator(
    control_plane: ControlPlane, tfjob_crd: Path, namespace: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """The TaaS operator watching this test's namespace only."""
    args = [f"--namespace={namespace}", "--kubeconfig", control_plane.kubeconfig]
    proc = launch_operator([*args, "--health-port=0"], tmp_path / "operator.log", None)
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless chromium for one module: Playwright's sync API keeps an event loop running in
    this thread while it is open, and later tests call asyncio.run (so not session-wide)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser page (1280x900); a script error on it fails the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    context.close()
    assert not errors, f"script errors on the page: {errors}"


@pytest.fixture(scope="session")
def artifacts() -> Path:
    return artifacts_dir()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    folder = artifacts_dir()
    shots = sorted(folder.glob("*.png"))
    if shots:
        terminalreporter.write_line(f"dashboard screenshots: {folder} ({len(shots)} files)")
