"""No import circle inside the project's packages, counting every import: at the top of a
module, inside a function, under `if TYPE_CHECKING:`. import-linter's contracts see only the
imports Python runs at import time of its graph (and skip none of the lazy ones by choice), so a
circle closed by a function-level or type-only import passes them; this walks the source itself.

    import_graph(folder, package) -> {module: {imported module: first line}}
    circles(graph) -> [sorted modules of each strongly connected component of 2 or more]

An import of `a.b.c` counts as importing `a.b` and `a` too (Python runs their `__init__`), except
the packages the importer is itself inside (they are already being imported).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (source folder, top-level package): every package of the repository whose circles CI checks.
PACKAGES = [
    ("operator", "taas_operator"),
    ("tools", "taas_controlplane"),
    ("trainer", "taas"),
]

Graph = dict[str, dict[str, int]]


def _modules(folder: Path, package: str) -> dict[str, Path]:
    """Every module of `package` under `folder`, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((folder / package).rglob("*.py")):
        parts = list(path.relative_to(folder).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _targets(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The dotted names one import statement asks for (relative ones made absolute)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        source = ".".join([*base, *([node.module] if node.module else [])])
    else:
        source = node.module or ""
    return [source, *(f"{source}.{alias.name}" for alias in node.names)]


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of `name` that is a module of ours (`pkg.mod.Class` -> `pkg.mod`)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(folder: Path, package: str) -> Graph:
    """Each module's imports of modules of the same package, with the first line of each."""
    modules = _modules(folder, package)
    graph: Graph = {name: {} for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            for target in _targets(node, name, path.name == "__init__.py"):
                hit = _known(target, modules)
                while hit:
                    inside = name == hit or name.startswith(hit + ".")
                    if not inside:
                        line = getattr(node, "lineno", 0)
                        graph[name][hit] = min(graph[name].get(hit, line), line)
                    hit = hit.rpartition(".")[0] or None
                    hit = hit if hit in modules else None
    return graph


def _reach(graph: Graph, start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def circles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of two or more modules (each a circle of imports)."""
    reach = {name: _reach(graph, name) for name in graph}
    found: list[list[str]] = []
    placed: set[str] = set()
    for name in sorted(graph):
        if name in placed:
            continue
        component = sorted(other for other in reach[name] if name in reach[other])
        placed.update(component)
        if len(component) > 1:
            found.append(component)
    return found


def _describe(graph: Graph, component: list[str]) -> str:
    edges = [
        f"  {a} -> {b} (line {line})"
        for a in component
        for b, line in sorted(graph[a].items())
        if b in component
    ]
    return f"circle of {len(component)}:\n" + "\n".join(edges)


@pytest.mark.parametrize(("folder", "package"), PACKAGES, ids=[p for _, p in PACKAGES])
def test_no_import_circle(folder: str, package: str) -> None:
    graph = import_graph(ROOT / folder, package)
    assert len(graph) > 5, f"found only {sorted(graph)} under {folder}/{package}"
    found = circles(graph)
    assert not found, "\n".join(_describe(graph, c) for c in found)


def test_the_check_sees_lazy_type_only_and_relative_imports(tmp_path: Path) -> None:
    """A circle closed only by a function-level import, one only by a TYPE_CHECKING import,
    one through a package's __init__ with relative imports: all three are found; a package
    whose __init__ imports its own submodule is not a circle."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "from pkg import b\n",
        "b.py": "def f():\n    from pkg.a import x\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.d import D\n",
        "d.py": "import pkg.c\n",
        "e.py": "from .sub.inner import g\n",
        "sub/__init__.py": "from .inner import g\nfrom .. import e\n",
        "sub/inner.py": "def g(): ...\n",
        "f.py": "",
        "own/__init__.py": "from pkg.own.part import p\n",
        "own/part.py": "from pkg.own import q\nfrom pkg import f\n",
    }
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    graph = import_graph(tmp_path, "pkg")
    assert circles(graph) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"], ["pkg.e", "pkg.sub"]]
    assert graph["pkg.b"] == {"pkg.a": 2}
    assert graph["pkg.own.part"] == {"pkg.f": 2}
