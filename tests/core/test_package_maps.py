"""The maps on the packages' doors are true: every module or folder a top-level package's
docstring names exists, and every module and subpackage it has is named.

    taas_operator/__init__.py, taas_controlplane/__init__.py   one entry a line: `name.py` or
                                                               `name/`, then what it holds
    taas/__init__.py                                           "Layout": `taas.<subpackage>`
                                                               then its modules, comma-separated

Paths the maps name (bench/harness/procstats.py) exist too; their dotted names are checked by
test_dotted_names.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOORS = {
    "taas_operator": REPO / "operator" / "taas_operator",
    "taas_controlplane": REPO / "tools" / "taas_controlplane",
}
TAAS = REPO / "trainer" / "taas"
ENTRY = re.compile(r"^ {2,}(\w+(?:\.py|/))(?: {2,}|$)", re.MULTILINE)
PATH = re.compile(r"(?<![\w/.])((?:bench|tests|operator|trainer|tools|docs)/[\w/.-]+\.(?:py|md))")


def _docstring(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""


def _contents(package: Path) -> set[str]:
    """What a map must name: the package's modules (but __init__) and its folders (but
    caches)."""
    found = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    found |= {f"{p.name}/" for p in package.iterdir() if p.is_dir() and not p.name.startswith("__")}
    return found


@pytest.mark.parametrize("name", sorted(DOORS))
def test_the_map_names_every_module_and_subpackage_and_nothing_else(name: str) -> None:
    package = DOORS[name]
    named = ENTRY.findall(_docstring(package))
    assert len(named) == len(set(named)), f"{name}'s map names one entry twice: {named}"
    assert sorted(set(named) - _contents(package)) == [], f"{name}'s map names what is not there"
    assert sorted(_contents(package) - set(named)) == [], f"{name}'s map leaves these out"


@pytest.mark.parametrize("name", sorted(DOORS))
def test_the_map_says_where_to_start_reading(name: str) -> None:
    text = _docstring(DOORS[name])
    assert "Where to start reading:" in text
    for path in PATH.findall(text):
        assert (REPO / path).exists(), f"{name}'s map names {path}, which does not exist"


def _layout() -> dict[str, set[str]]:
    """taas's "Layout" block: subpackage -> the modules it names (the last word of each
    comma- or semicolon-separated item, parentheses left out)."""
    text = _docstring(TAAS)
    block = text[text.index("Layout") :].split("\n\n")[1]
    entries: dict[str, str] = {}
    current = ""
    for line in block.splitlines():
        match = re.match(r"^ {4}(taas(?:\.\w+)?) +(.*)$", line)
        if match:
            current = match[1]
            entries[current] = match[2]
        elif current:
            entries[current] += " " + line.strip()
    layout = {}
    for package, description in entries.items():
        while "(" in description:
            description = re.sub(r"\([^()]*\)", "", description)
        words = [re.findall(r"\w+", item) for item in re.split(r"[,;]", description)]
        layout[package] = {item[-1] for item in words if item}
    return layout


def test_the_trainers_layout_names_every_module_and_subpackage() -> None:
    layout = _layout()
    subpackages = {f"taas.{p.parent.name}" for p in TAAS.glob("*/__init__.py")}
    assert set(layout) == {"taas"} | subpackages
    for package, modules in layout.items():
        folder = TAAS.joinpath(*package.split(".")[1:])
        there = {p.stem for p in folder.glob("*.py")} - (
            {"__init__"} if package != "taas" else set()
        )
        assert modules == there, f"{package}: named but absent {sorted(modules - there)}, " + (
            f"present but not named {sorted(there - modules)}"
        )


def test_the_checks_see_a_wrong_map(tmp_path: Path) -> None:
    lines = ["Map.", "", "Inside:", "    real.py   x", "    gone/   y"]
    (tmp_path / "__init__.py").write_text('"""' + "\n".join(lines) + '\n"""\n')
    (tmp_path / "real.py").write_text("")
    (tmp_path / "unnamed.py").write_text("")
    named = set(ENTRY.findall(_docstring(tmp_path)))
    assert named - _contents(tmp_path) == {"gone/"}
    assert _contents(tmp_path) - named == {"unnamed.py"}
