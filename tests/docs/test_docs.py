"""README.md and docs/*.md say only what is true: links resolve, commands parse, one copy of code.

- Every relative link (and image) resolves to a file of the repository, and its `#anchor`, if
  any, to a heading of the page it names.
- Every code block fenced as `bash`/`sh`/`shell` is checked unless an `<!-- illustration ... -->`
  comment stands on the line before it (blocks with `<placeholders>`): each `taas ...` and
  `taas-controlplane ...` command in it (pipelines, `&&`, `$(...)` included) parses with the
  real argument parser, each `python -m MODULE` names an importable module, every path under
  one of the repository's top-level folders exists, and `taas validate`/`taas render` lines run
  as written. Transcripts are fenced `console` or `text`, never checked; every fence names its
  language.
- A block after `<!-- include: PATH -->` appears verbatim in PATH: each example program exists
  once, in examples/, and the docs show it as it is.
- docs/trainer.md's settings table is the one `python -m taas.settings_doc --markdown` prints.
- The README stays a front door (under 250 lines) whose map links every page of docs/.

What is run elsewhere, for real: the README's two commands. `bash .ci/run` is the CI script
itself (it ends with the test command the README names, `python -m pytest -q`), and the set-up
command (venv, `pip install -e '.[tensorflow]'`, `taas run examples/mnist/async.yaml`) is what
the fresh-machine check runs verbatim; tests/local/test_local_examples.py runs that job too.
The one-node cluster's block in docs/deploy.md is run verbatim by
tests/e2e/test_readme_cluster.py (a `node` test). Here those blocks are parsed and checked like
every other.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from taas_controlplane.__main__ import build_parser as controlplane_parser
from taas_operator.cli import build_parser as taas_parser
from tests.harness.markdown_blocks import PAGES, REPO, Block, all_blocks, anchors, read

pytestmark = pytest.mark.fast

SHELL = {"bash", "sh", "shell"}
# Top-level entries of the repository whose paths the docs name (not .venv, caches, builds).
TOP = {p.name for p in REPO.iterdir() if not p.name.startswith(".")} | {".ci"}
RUN_VERBATIM = {("taas", "validate"), ("taas", "render")}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
BLOCKS = all_blocks()
LINKS = [link for page in PAGES for link in read(page)[2]]


def _ids(items: list[Block]) -> list[str]:
    return [block.where for block in items]


def _logical_lines(text: str) -> list[str]:
    """The block's lines with `\\`-continuations joined."""
    joined: list[str] = []
    pending = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    if pending:
        joined.append(pending)
    return [line for line in joined if line.strip()]


def _commands(line: str) -> list[list[str]]:
    """Simple commands of one shell line: split at `&&`, `||`, `|`, `;`; `$(...)` ones added."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token and set(token) <= set("&|;()"):
            commands.append([])
        else:
            commands[-1].append(token)
    for inner in re.findall(r"\$\(([^()]*)\)", line):
        commands.extend(_commands(inner))
    out = []
    for command in commands:
        while command and (_ASSIGNMENT.match(command[0]) or command[0] == "sudo"):
            command = command[1:]
        if command:
            out.append(command)
    return out


def _paths(command: list[str]) -> list[str]:
    """Tokens that name a path inside the repository (first segment a top-level entry)."""
    found = []
    for token in command[1:]:
        value = token.split("=", 1)[1] if token.startswith("-") and "=" in token else token
        if value.startswith(("-", "/", "~")) or set(value) & set("<>$*{}[]"):
            continue
        if value.split("/", 1)[0] in TOP:
            found.append(value.rstrip("/"))
    return found


def _parse(parser: argparse.ArgumentParser, args: list[str]) -> str | None:
    """None when `args` parse, else argparse's complaint."""
    try:
        parser.parse_args(args)
    except SystemExit as stop:  # argparse's way out: 0 for --help, 2 for an error
        return None if stop.code == 0 else f"does not parse: `{shlex.join(args)}`"
    return None


def _problems(command: list[str]) -> list[str]:
    """What is wrong with one simple command of a checked block."""
    problems = [f"no such path {p}" for p in _paths(command) if not (REPO / p).exists()]
    program, args = command[0], command[1:]
    if program == "taas":
        problems.append(_parse(taas_parser(), args) or "")
    elif program == "taas-controlplane":
        problems.append(_parse(controlplane_parser(), args) or "")
    elif program in {"python", "python3"} and args[:1] == ["-m"]:
        module = args[1] if len(args) > 1 else ""
        problems.append(
            "" if module and importlib.util.find_spec(module) else f"no module {module!r}"
        )
    return [p for p in problems if p]


def _checked(block: Block) -> bool:
    return block.info in SHELL and not block.comment.startswith("illustration")


CHECKED = [b for b in BLOCKS if _checked(b)]


def test_every_fence_names_its_language() -> None:
    bare = [block.where for block in BLOCKS if not block.info]
    assert not bare, f"say what these are (bash, console, text, yaml, python...): {bare}"


@pytest.mark.parametrize("link", LINKS, ids=[f"{ln.page.name}:{ln.line}" for ln in LINKS])
def test_relative_links_resolve(link) -> None:  # type: ignore[no-untyped-def]
    target = link.target
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
        return
    path, _, anchor = target.partition("#")
    page = (link.page.parent / path).resolve() if path else link.page
    where = f"{link.page.relative_to(REPO)}:{link.line}"
    assert page.exists(), f"{where}: link {target!r}: no such file {page}"
    assert REPO in page.parents or page == REPO, f"{where}: link {target!r} leaves the repository"
    if anchor:
        assert page.suffix == ".md", f"{where}: anchor on a non-Markdown target {target!r}"
        known = anchors(read(page)[1])
        assert anchor in known, f"{where}: no heading for #{anchor} in {page.name}: {sorted(known)}"


@pytest.mark.parametrize("block", CHECKED, ids=_ids(CHECKED))
def test_shell_block_commands_parse_and_name_existing_paths(
    block: Block, capsys: pytest.CaptureFixture[str]
) -> None:
    problems = [
        f"`{line.strip()}`: {problem}"
        for line in _logical_lines(block.text)
        for command in _commands(line)
        for problem in _problems(command)
    ]
    assert not problems, f"{block.where}: " + "\n".join(problems)
    capsys.readouterr()  # what --help printed


RUNNABLE = [
    (block, line)
    for block in CHECKED
    for line in _logical_lines(block.text)
    if any(tuple(c[:2]) in RUN_VERBATIM for c in _commands(line))
]


@pytest.mark.parametrize(
    ("block", "line"), RUNNABLE, ids=[f"{b.where}:{ln.split('#')[0].strip()}" for b, ln in RUNNABLE]
)
def test_cheap_commands_run_as_written(block: Block, line: str) -> None:
    """`taas validate` and `taas render` lines, run by bash from the repository's root."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", line],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{block.where}: `{line}` exited {done.returncode}:\n{done.stderr}"
    assert done.stdout.strip(), f"{block.where}: `{line}` printed nothing"


def test_there_are_commands_to_run() -> None:
    """The checks above have something to check (a parser change cannot empty them silently)."""
    assert len(CHECKED) >= 10 and len(RUNNABLE) >= 2, (len(CHECKED), len(RUNNABLE))


INCLUDES = [b for b in BLOCKS if b.comment.startswith("include:")]


@pytest.mark.parametrize("block", INCLUDES, ids=_ids(INCLUDES))
def test_included_code_is_the_file_itself(block: Block) -> None:
    source = (block.page.parent / block.comment.removeprefix("include:").strip()).resolve()
    assert source.is_file(), f"{block.where}: no such file {source}"
    assert block.text.strip() and block.text in source.read_text(), (
        f"{block.where}: this block is no longer a verbatim part of {source.relative_to(REPO)}: "
        "copy it again from the file"
    )


def test_the_linear_regression_example_exists_once() -> None:
    """One copy of the program (examples/), shown by reference in the docs, nowhere else."""
    holders = [
        str(path.relative_to(REPO))
        for folder in ("operator", "trainer", "tools", "docs", "examples")
        for path in (REPO / folder).rglob("*")
        if path.suffix in {".py", ".md"} and "class LinearRegression(" in path.read_text()
    ]
    if "class LinearRegression(" in (REPO / "README.md").read_text():
        holders.append("README.md")
    assert sorted(holders) == ["docs/trainer.md", "examples/linear_regression/linear_regression.py"]
    assert any(b.page.name == "trainer.md" for b in INCLUDES), "docs/trainer.md includes it"


def test_readme_is_a_front_door_with_a_map_of_docs() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) < 250
    links = read(REPO / "README.md")[2]
    linked = {(REPO / link.target.partition("#")[0]).resolve() for link in links}
    unlinked = [p.name for p in sorted((REPO / "docs").glob("*.md")) if p.resolve() not in linked]
    assert not unlinked, f"add these docs/ pages to the README's map: {unlinked}"


def test_readme_two_commands_are_the_ones_ci_and_the_fresh_machine_run() -> None:
    runs = [b for b in read(REPO / "README.md")[0] if b.comment.startswith("runs:")]
    assert [b.text.strip() for b in runs][1:] == ["bash .ci/run"], [b.text for b in runs]
    setup = runs[0].text
    for part in ("python3 -m venv .venv", "pip install -e '.[tensorflow]'", "taas run examples/"):
        assert part in setup, f"the README's set-up command lost {part!r}"
    job = re.search(r"taas run (\S+)", setup)
    assert job and (REPO / job.group(1)).is_file()
    assert job.group(1) in (REPO / "tests/local/test_local_examples.py").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    assert "python -m pytest -q" in ci and "python -m pytest -q" in (REPO / "README.md").read_text()


def test_the_settings_table_of_the_trainer_page_is_the_generated_one() -> None:
    """docs/trainer.md lists every setting as the settings model has it (flags, variables,
    meaning, default): regenerate with `python -m taas.settings_doc --markdown`."""
    from taas.settings_doc import markdown

    text = (REPO / "docs" / "trainer.md").read_text()
    begin = "<!-- settings: python -m taas.settings_doc --markdown -->\n"
    end = "\n<!-- end settings -->"
    assert begin in text and end in text, "docs/trainer.md lost its settings markers"
    shown = text.split(begin, 1)[1].split(end, 1)[0]
    assert shown == markdown(), "regenerate: python -m taas.settings_doc --markdown"
