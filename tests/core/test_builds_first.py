"""tests/builds.py: a test's timeout starts once what it needs is built, and the tests needing
the latest CI builds run last.

The build is faked where it cannot be real in a fast test: this process holds the real build
locks of `taas_controlplane.build.binaries` (as CI's background build does while it compiles) and
writes the binaries before it lets them go; the inner pytest session's `ensure` is the real one.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from taas_controlplane.build.binaries import BINARIES, binary_path
from tests.builds import CI_BUILD_ORDER

REPO = Path(__file__).resolve().parents[2]

CONFTEST = """
import os

import pytest

from taas_controlplane.build.binaries import ensure
from tests import builds


def pytest_configure(config):
    config.addinivalue_line("markers", "builds: what the test needs built")
    if os.environ["WITH_BUILDS_FIRST"] == "1":
        config.pluginmanager.register(builds.BuildsFirst(config), "taas-builds-first")


def pytest_collection_modifyitems(items):
    builds.order(items)


def pytest_collection_finish(session):
    open("collected", "w").close()  # the outer test's cue: the tests are about to run


@pytest.fixture
@builds.needs("kwok")
def kwok():
    return ensure("kwok")
"""
TESTS = {
    "test_a_marked.py": """
import pytest
from taas_controlplane.build.binaries import ensure

pytestmark = [pytest.mark.builds("kueue"), pytest.mark.timeout(1)]


def test_marked():
    assert ensure("kueue").read_text() == "built"
""",
    "test_b_fixture.py": """
import pytest


@pytest.mark.timeout(1)
def test_fixture(kwok):
    assert kwok.read_text() == "built"
""",
    "test_c_nothing.py": """
def test_nothing():
    pass
""",
}
#: How long each fake build holds its lock once the tests are about to run: longer than the
#: 1 s timeout of the test that needs it, counted from where that test starts.
HELD = {"kwok": 2.5, "kueue": 4.5}


def _session(directory: Path, with_hook: bool) -> subprocess.Popen[str]:
    directory.mkdir(exist_ok=True)  # its cache made already
    (directory / "conftest.py").write_text(CONFTEST)
    for name, text in TESTS.items():
        (directory / name).write_text(text)
    env = {
        **os.environ,
        "TAAS_CACHE_DIR": str(directory / "cache"),
        "PYTHONPATH": str(REPO),
        "WITH_BUILDS_FIRST": "1" if with_hook else "0",
    }
    argv = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "--rootdir", "."]
    return subprocess.Popen(
        argv, cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_a_test_waiting_for_a_build_starts_its_clock_once_it_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locks = []
    for run in ("hooked", "bare"):  # each its own cache, so its own build locks and binaries
        monkeypatch.setenv("TAAS_CACHE_DIR", str(tmp_path / run / "cache"))
        for name in HELD:
            path = tmp_path / run / "cache" / "locks" / f"{name}.lock"
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = path.open("w")
            fcntl.flock(handle, fcntl.LOCK_EX)  # the build is under way
            locks.append((run, name, binary_path(name), handle))
    sessions = {
        "hooked": _session(tmp_path / "hooked", True),
        "bare": _session(tmp_path / "bare", False),
    }
    deadline = time.monotonic() + 60
    while not all((tmp_path / run / "collected").exists() for run in sessions):
        assert time.monotonic() < deadline, "the inner sessions did not collect in 60 s"
        time.sleep(0.05)
    started = time.monotonic()
    for _run, name, target, handle in sorted(locks, key=lambda lock: HELD[lock[1]]):
        time.sleep(max(0.0, started + HELD[name] - time.monotonic()))
        target.parent.mkdir(parents=True)
        target.write_text("built")
        handle.close()  # the build is done: its lock released
    hooked, bare = (sessions[run].communicate(timeout=60)[0] for run in ("hooked", "bare"))

    assert sessions["hooked"].returncode == 0, hooked
    assert "3 passed" in hooked, hooked
    order = re.findall(r"^(test_\w+)\.py::", hooked, re.MULTILINE)
    assert order == ["test_c_nothing", "test_b_fixture", "test_a_marked"], hooked
    # Without the hook the same tests meet the builds inside their 1 s: both time out.
    assert sessions["bare"].returncode == 1, bare
    assert "1 failed, 1 passed, 1 error" in bare, bare  # the fixture's timeout is an error
    assert re.findall(r"^(?:FAILED|ERROR) (test_\w+)\.py.*Timeout", bare, re.MULTILINE) == [
        "test_a_marked",
        "test_b_fixture",
    ], bare


def test_ci_builds_in_the_order_the_tests_expect() -> None:
    """.ci/run's background build names the binaries in CI_BUILD_ORDER, every one buildable."""
    script = (REPO / ".ci" / "run").read_text()
    command = re.search(r"taas-controlplane build ((?:[\w-]+\s*\\?\s*)+)>", script)
    assert command is not None, "no `taas-controlplane build ...` line in .ci/run"
    assert tuple(command[1].replace("\\", " ").split()) == CI_BUILD_ORDER
    assert set(CI_BUILD_ORDER) <= set(BINARIES)
