"""The long (`slow`) versions of the core property tests (e.g. 2000 random pod templates instead
of 200) are deselected unless asked for: `python -m pytest tests/core -m slow`, or the test id
named on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect tests/core's `slow` tests unless `-m` or a test id asks for them."""
    if config.getoption("-m") or any("::" in arg for arg in config.args):
        return
    keep, drop = [], []
    for item in items:
        mine = HERE in Path(str(item.fspath)).resolve().parents
        (drop if mine and item.get_closest_marker("slow") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
