"""Dotted names in docstrings and docs point at something real: `planner.plan_job`,
`taas_operator.controller.reconcile.tensorboard`, `taas.keras.hooks`, `taas_controlplane.sim`.

A name rooted at a package (`taas_operator.`, `taas.`, `taas_controlplane.`) or at one of
taas_operator's subpackages docs name bare (`planner.`, `controller.`) is followed through the
source tree without importing anything (TensorFlow stays out of the fast tier): packages and
modules by their files, then the module's top-level names (defined or imported), then a class's
own names. What cannot be followed statically (an instance attribute, a name set at run time) is
named in ALLOWED with the reason.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = {
    "taas_operator": REPO / "operator" / "taas_operator",
    "taas": REPO / "trainer" / "taas",
    "taas_controlplane": REPO / "tools" / "taas_controlplane",
    "planner": REPO / "operator" / "taas_operator" / "planner",
    "controller": REPO / "operator" / "taas_operator" / "controller",
}
NAME = re.compile(r"(?<![\w./-])(" + "|".join(ROOTS) + r")((?:\.[A-Za-z_]\w*)+)(?![\w/-])")
#: A file name, not a Python name (`controller.py`, `taas.yaml`).
SUFFIXES = {"py", "yaml", "yml", "md", "json", "txt", "log", "toml", "sh"}
#: Names that cannot be followed statically, with the reason.
ALLOWED: dict[str, str] = {
    **{
        f"controller.{name}": "controller.controller's usage lines: a Controller named controller"
        for name in ("start", "tfjob_event", "child_event", "jobs", "close")
    },
}
SOURCES = ("operator", "trainer", "tools", "bench", "tests")


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _names(body: list[ast.stmt]) -> set[str]:
    """The names a module or class body binds at its top level (incl. under if/try)."""
    found: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                found |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                found |= _exported(body, node.value)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.If | ast.Try):
            found |= _names(node.body + node.orelse + getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                found |= _names(handler.body)
    return found


def _exported(body: list[ast.stmt], value: ast.expr) -> set[str]:
    """The strings `__all__` lists, also through a module-level dict it is made from (the
    lazy exports' `__all__ = sorted(_LAZY)`)."""
    names = {c.value for c in ast.walk(value) if isinstance(c, ast.Constant)}
    for used in {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}:
        for node in body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            if any(isinstance(t, ast.Name) and t.id == used for t in targets):
                assert isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
                names |= (
                    _exported(body, node.value)
                    if not isinstance(node.value, ast.Dict)
                    else {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
                )
    return {name for name in names if isinstance(name, str)}


def _class(body: list[ast.stmt], name: str) -> ast.ClassDef | None:
    return next((n for n in body if isinstance(n, ast.ClassDef) and n.name == name), None)


def resolves(root: str, parts: list[str]) -> bool:
    """Whether `root.parts...` names a package, module, or a name in one (see the docstring)."""
    place = ROOTS[root]
    for index, part in enumerate(parts):
        if (place / part / "__init__.py").exists():
            place = place / part
            continue
        module = place / f"{part}.py"
        if module.exists():
            rest, body = parts[index + 1 :], _tree(module).body
        else:
            rest, body = parts[index:], _tree(place / "__init__.py").body
        if not rest:
            return True
        if rest[0] not in _names(body):
            return False
        cls = _class(body, rest[0])
        return len(rest) == 1 or cls is None or rest[1] in _names(cls.body)
    return True


def _docstrings(path: Path) -> list[str]:
    nodes = [n for n in ast.walk(_tree(path)) if isinstance(n, ast.Module | ast.ClassDef)]
    nodes += [n for n in ast.walk(_tree(path)) if isinstance(n, ast.FunctionDef)]
    nodes += [n for n in ast.walk(_tree(path)) if isinstance(n, ast.AsyncFunctionDef)]
    return [doc for n in nodes if (doc := ast.get_docstring(n))]


def _texts() -> list[tuple[str, str]]:
    texts = [(str(p.relative_to(REPO)), p.read_text()) for p in sorted(REPO.glob("docs/*.md"))]
    texts.append(("README.md", (REPO / "README.md").read_text()))
    for source in SOURCES:
        for path in sorted((REPO / source).rglob("*.py")):
            if "/go/" not in str(path):
                texts += [(str(path.relative_to(REPO)), d) for d in _docstrings(path)]
    return texts


def _dotted(text: str) -> list[tuple[str, list[str]]]:
    found = []
    for match in NAME.finditer(text):
        parts = match[2].lstrip(".").split(".")
        if parts[-1] in SUFFIXES:
            continue
        found.append((match[1], parts))
    return found


def test_dotted_names_in_docstrings_and_docs_resolve() -> None:
    wrong = sorted(
        {
            f"{where}: {root}.{'.'.join(parts)}"
            for where, text in _texts()
            for root, parts in _dotted(text)
            if f"{root}.{'.'.join(parts)}" not in ALLOWED and not resolves(root, parts)
        }
    )
    assert not wrong, "dotted names that name nothing:\n" + "\n".join(wrong)


def test_the_check_finds_names_and_refuses_wrong_ones() -> None:
    found = _dotted(
        "`planner.plan_job`, planner.tensorboard, controller.py, taas.dev/x, a.planner.b"
    )
    assert found == [("planner", ["plan_job"]), ("planner", ["tensorboard"])]
    assert resolves("planner", ["plan_job"])
    assert not resolves("planner", ["tensorboard"])
    assert resolves("controller", ["reconcile", "tensorboard", "TensorBoards"])
    assert not resolves("controller", ["reconcile", "tensorboard", "Nothing"])
    assert resolves("taas_controlplane", ["build", "binaries", "BINARIES"])
    assert not resolves("taas_controlplane", ["binaries", "BINARIES"])
    assert resolves("taas", ["keras", "hooks"])
    assert not resolves("taas", ["keras", "nohooks"])


@pytest.mark.parametrize("text", ["`planner.objects.desired_pods`", "taas_operator.api.TFJob"])
def test_real_names_pass(text: str) -> None:
    assert all(resolves(root, parts) for root, parts in _dotted(text))
