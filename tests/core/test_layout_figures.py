"""docs/development.md's figures of the tree are the tree's: the module counts of its Layout
(exact) and the fast tier's test count (within a tenth, so a few tests more do not make it
wrong; a round number is all a reader needs)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "development.md"


def _modules(folder: str) -> int:
    return sum(1 for p in (REPO / folder).rglob("*.py") if "/go/" not in p.as_posix())


#: Each Layout entry with a module count, and how to count it.
COUNTS = {
    "operator/taas_operator/": lambda: _modules("operator/taas_operator"),
    "trainer/taas/": lambda: _modules("trainer/taas"),
    "tools/taas_controlplane/": lambda: _modules("tools/taas_controlplane"),
    "bench/": lambda: _modules("bench"),
    "tests/": lambda: sum(1 for _ in (REPO / "tests").rglob("test_*.py")),
}


def _layout_entries() -> dict[str, str]:
    text = DOC.read_text()
    block = text[text.index("## Layout") :].split("```text\n")[1].split("```")[0]
    entries: dict[str, str] = {}
    name = ""
    for line in block.splitlines():
        if line and not line.startswith(" "):
            name, _, rest = line.partition(" ")
            entries[name] = rest
        elif name:
            entries[name] += " " + line.strip()
    return entries


@pytest.mark.parametrize("entry", sorted(COUNTS))
def test_the_layouts_module_counts_are_the_trees(entry: str) -> None:
    said = re.search(r"(\d+) (?:test )?modules", _layout_entries()[entry])
    assert said, f"docs/development.md's Layout gives {entry} no module count"
    assert int(said[1]) == COUNTS[entry](), f"{entry} has {COUNTS[entry]()} modules, not {said[1]}"


def _fast_tier_size(config: pytest.Config, session: pytest.Session) -> int:
    """The fast tier's test count: this session's when it is the fast tier, else collected."""
    whole = config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.option.keyword
    if whole and config.option.markexpr == "fast":
        return len(session.items)
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "fast"]
    done = subprocess.run(
        [*argv, "-p", "no:cacheprovider"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    counted = re.search(r"^(\d+)/\d+ tests collected", done.stdout, re.MULTILINE)
    assert counted, done.stdout[-2000:] + done.stderr[-2000:]
    return int(counted[1])


def test_the_fast_tiers_test_count_is_about_right(request: pytest.FixtureRequest) -> None:
    said = re.search(r"about (\d+) tests;", DOC.read_text())
    assert said, "docs/development.md gives the fast tier no test count ('about N tests;')"
    real = _fast_tier_size(request.config, request.session)
    assert abs(real - int(said[1])) <= int(said[1]) / 10, f"the fast tier has {real} tests"
