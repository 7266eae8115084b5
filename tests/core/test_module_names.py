"""Module names say what is inside: two modules of TaaS share a file name only where they play
the same part (each package's own flags, settings, errors; the two trainer engines' siblings).
A new module whose name another module already has either joins `SAME_PART` with the reason, or
takes a name of its own (issue 30: five progress.py did five different things)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("operator", "trainer", "tools")

#: file name -> (the modules that have it, relative to their folder; the part they all play).
SAME_PART: dict[str, tuple[frozenset[str], str]] = {
    name: (frozenset(paths), part)
    for name, paths, part in [
        ("__init__.py", (), "a package"),
        ("__main__.py", (), "a package run with python -m"),
        ("cli.py", ("taas_operator/cli.py", "taas_controlplane/sim/cli.py"), "a command line"),
        (
            "cluster.py",
            ("taas_controlplane/cluster/cluster.py", "taas_controlplane/sim/cluster.py"),
            "a Kubernetes cluster on this machine: real nodes, or kwok's",
        ),
        (
            "errors.py",
            (
                "taas_operator/api/errors.py",
                "taas_operator/apiserver/errors.py",
                "taas_operator/client/errors.py",
                "taas_operator/documents/errors.py",
            ),
            "the exceptions of its package",
        ),
        (
            "stack.py",
            (
                "taas_controlplane/cluster/katib/stack.py",
                "taas_controlplane/cluster/scheduling/stack.py",
            ),
            "parts run on the host beside a cluster, started and stopped as one (HostParts)",
        ),
        (
            "flags.py",
            (
                "taas_operator/controller/flags.py",
                "taas_operator/dashboard/flags.py",
                "taas/core/flags.py",
            ),
            "a program's command-line flags",
        ),
        (
            "logs.py",
            ("taas_operator/client/logs.py", "taas_operator/dashboard/cluster/logs.py"),
            "a TFJob's replica logs from a cluster, followed and merged",
        ),
        (
            "main.py",
            ("taas_operator/controller/main.py", "taas_operator/dashboard/main.py"),
            "a `taas` subcommand's run until stopped",
        ),
        (
            "models.py",
            ("taas_operator/api/models.py", "taas_operator/client/models.py"),
            "the pydantic models at its package's boundary",
        ),
        (
            "objects.py",
            ("taas_operator/planner/objects.py", "taas_operator/tensorboard/objects.py"),
            "the Kubernetes objects a job needs, built purely",
        ),
        (
            "settings.py",
            ("taas_operator/settings.py", "taas/core/settings.py"),
            "a program's pydantic-settings model",
        ),
        (
            "source.py",
            ("taas_operator/dashboard/source.py", "taas_operator/dashboard/cluster/source.py"),
            "the dashboard's Source: the protocol and the cluster's",
        ),
        (
            "engine.py",
            ("taas/core/engine.py", "taas/graph/engine.py", "taas/keras/engine.py"),
            "the trainer's Engine: the protocol and its two implementations",
        ),
        *[
            (name, (f"taas/graph/{name}", f"taas/keras/{name}"), part)
            for name, part in [
                ("evaluator.py", "an engine's evaluator task"),
                ("hooks.py", "a hook class's hooks"),
                ("steps.py", "an engine's step"),
                ("trainer.py", "the hook class users subclass"),
            ]
        ],
    ]
}


def _modules_by_name() -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            if "__pycache__" not in path.parts:
                found[path.name].add(path.relative_to(ROOT / folder).as_posix())
    return found


def test_modules_share_a_name_only_where_they_play_the_same_part() -> None:
    found = _modules_by_name()
    shared = {name: paths for name, paths in found.items() if len(paths) > 1}
    unexplained = {
        name: sorted(paths)
        for name, paths in shared.items()
        if name not in SAME_PART or (SAME_PART[name][0] and paths != SAME_PART[name][0])
    }
    assert not unexplained, f"modules of one name doing different things: {unexplained}"


def test_every_listed_name_is_still_shared() -> None:
    found = _modules_by_name()
    stale = sorted(name for name in SAME_PART if len(found.get(name, ())) < 2)
    assert not stale, f"no longer shared, drop them from SAME_PART: {stale}"
