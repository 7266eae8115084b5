"""Fixtures for the deployment tests: the Helm binary and parsed chart renders.

Helm is real (built from the Go module proxy by `taas_controlplane.build.binaries.ensure`, cached);
the control plane, where a test needs one, is the session fixture from tests/conftest.py.
Nothing is faked here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_controlplane.build.binaries import ensure
from tests.builds import needs
from tests.deploy.rendered import Docs
from tests.deploy.sync_chart import render


@pytest.fixture(scope="session")
@needs("helm")
def helm() -> Path:
    """The Helm binary (built once from Go modules, then cached)."""
    return ensure("helm")


@pytest.fixture(scope="session")
def render_docs(helm: Path) -> Callable[..., Docs]:
    """`render_docs("key=value", ..., release=, namespace=)` -> the rendered objects, parsed."""

    def _render(*set_values: str, **kwargs: Any) -> Docs:
        text = render(*set_values, helm=helm, **kwargs)
        return [doc for doc in yaml.safe_load_all(text) if doc]

    return _render
