"""Builds before the clock: what a test needs built is made (or waited for) before its timeout
starts, and the tests needing the latest builds of CI run last.

A test declares the control-plane binaries and images it needs, in either of two ways:

    pytestmark = pytest.mark.builds("kueue")               # the test (or module) itself
    @pytest.fixture(scope="module")
    @needs("scheduler-plugins-scheduler", images=("trainer",))   # a fixture it uses
    def gang_scheduler(...): ...

`BuildsFirst` (registered by tests/conftest.py) calls `taas_controlplane.build.binaries.ensure` and
`images.ensure_image` for them in its `pytest_runtest_protocol` wrapper, which runs outside
pytest-timeout's (it starts its timer in its own `pytest_runtest_protocol` wrapper; this one is
`tryfirst`, so the outer one). A binary still being built by CI's background build (.ci/run) is
waited for on its build lock there, and a missing one is built there, so a test's timeout counts
only the test. A build that fails is left to the test's own fixture, which meets the same error
and reports it as the test's.

CI builds the binaries in `CI_BUILD_ORDER` (the order .ci/run names them;
tests/core/test_builds_first.py checks they agree), and `order` runs the tests that need none
of them, then those needing the earlier builds, so the build keeps ahead of the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import pytest

from taas_controlplane.build.binaries import BINARIES, BuildError, binary_path, ensure

F = TypeVar("F", bound=Callable[..., Any])

#: The order .ci/run's background build makes the binaries in.
CI_BUILD_ORDER = (
    "etcd",
    "kube-apiserver",
    "kubectl",
    "helm",
    "registry",
    "local-path-provisioner",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "scheduler-plugins-scheduler",
    "scheduler-plugins-controller",
    "kueue",
    "kubelet",
    "kube-proxy",
    "coredns",
    "kube-router",
    "katib-controller",
    "katib-db-manager",
    "katib-suggestion-goptuna",
    "katib-file-metricscollector",
)
#: scheduler-plugins' coscheduling (scheduler, controller) and Kueue (`SchedulingStack`).
SCHEDULERS = ("scheduler-plugins-scheduler", "scheduler-plugins-controller", "kueue")
#: What `KatibStack` runs or builds its images from.
KATIB = tuple(name for name in CI_BUILD_ORDER if name.startswith("katib-"))
#: The attribute `needs` sets on a fixture's function.
ATTRIBUTE = "taas_builds"


def needs(*binaries: str, images: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Mark a fixture's function (put it under `@pytest.fixture`) as needing these binaries
    (names of `taas_controlplane.build.binaries.BINARIES`) and images
    (`taas_controlplane.build.images` targets)."""
    unknown = [name for name in binaries if name not in BINARIES]
    if unknown:
        raise ValueError(f"needs(): unknown binaries {unknown}; known: {sorted(BINARIES)}")

    def mark(function: F) -> F:
        setattr(function, ATTRIBUTE, (tuple(binaries), tuple(images)))
        return function

    return mark


def needed(item: pytest.Item) -> tuple[list[str], list[str]]:
    """The binaries and images `item` needs: its `builds` markers' and its fixtures'."""
    binaries: list[str] = []
    images: list[str] = []
    for marker in item.iter_markers("builds"):
        binaries += marker.args
        images += marker.kwargs.get("images", ())
    info = getattr(item, "_fixtureinfo", None)
    for definitions in info.name2fixturedefs.values() if info else ():
        # The last definition is the one the item gets (a closer one overrides the others).
        declared = getattr(definitions[-1].func, ATTRIBUTE, None) if definitions else None
        if declared:
            binaries += declared[0]
            images += declared[1]
    unknown = [name for name in binaries if name not in BINARIES]
    if unknown:
        raise pytest.UsageError(f"{item.nodeid}: builds {unknown} are not binaries of BINARIES")
    return list(dict.fromkeys(binaries)), list(dict.fromkeys(images))


def _latest(binaries: Iterable[str]) -> int:
    """Where the last of `binaries` comes in CI's build (-1 for none; after all if not built)."""
    order = {name: place for place, name in enumerate(CI_BUILD_ORDER)}
    return max((order.get(name, len(order)) for name in binaries), default=-1)


def order(items: list[pytest.Item]) -> None:
    """Sort `items` (stably) by the latest CI build their module needs, so each module's tests
    stay together and the tests needing the earliest builds come first."""
    latest: dict[object, int] = {}
    for item in items:
        module = item.getparent(pytest.Module) or item
        latest[module] = max(latest.get(module, -1), _latest(needed(item)[0]))
    items[:] = sorted(items, key=lambda item: latest[item.getparent(pytest.Module) or item])


class BuildsFirst:
    """Make what each test needs before pytest-timeout starts its clock."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.ready: set[str] = set()  # made once in this session: not looked at again

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        binaries, images = needed(item)
        images = [target for target in images if f"image:{target}" not in self.ready]
        missing = [name for name in binaries if name not in self.ready]
        missing = [name for name in missing if not binary_path(name).exists()]
        self.ready.update(name for name in binaries if name not in missing)
        if missing or images:
            self._make(missing, images)
        yield

    def _make(self, binaries: list[str], images: list[str]) -> None:
        what = ", ".join([*binaries, *(f"the {target} image" for target in images)])
        self._say(f"before the test's clock starts: waiting for (or building) {what}")
        try:
            for name in binaries:
                ensure(name)
                self.ready.add(name)
            if images:
                from taas_controlplane.build.images import ensure_image

                for target in images:
                    ensure_image(target)  # type: ignore[arg-type]
                    self.ready.add(f"image:{target}")
        except BuildError:
            pass  # the test's own fixture meets the same error and reports it

    def _say(self, message: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"[taas builds] {message}")
