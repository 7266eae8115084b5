"""Read the project's Markdown the way the documentation checks need it (tests/docs/test_docs.py).

Not a Markdown parser: fenced code blocks (with their info string and the HTML comment on the
line before), headings as GitHub turns them into `#anchors`, and relative links outside code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_COMMENT = re.compile(r"^\s*<!--\s*(.*?)\s*-->\s*$")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_INLINE_CODE = re.compile(r"(`+).*?\1")


@dataclass(frozen=True)
class Block:
    """One fenced code block."""

    page: Path
    line: int  # of the opening fence, 1-based
    info: str  # the fence's info string ("bash", "console", ...), "" when none
    text: str  # the lines between the fences
    comment: str  # the HTML comment on the line before the fence ("" when none)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


@dataclass(frozen=True)
class Link:
    page: Path
    line: int
    target: str


def read(page: Path) -> tuple[list[Block], list[str], list[Link]]:
    """The page's code blocks, heading lines (outside code) and links (outside code)."""
    blocks: list[Block] = []
    headings: list[str] = []
    links: list[Link] = []
    lines = page.read_text().splitlines()
    fence: str | None = None
    start, info, comment = 0, "", ""
    body: list[str] = []
    for number, line in enumerate(lines, 1):
        if fence is not None:
            if line.strip().startswith(fence) and line.strip().strip(fence[0]) == "":
                blocks.append(Block(page, start, info, "".join(f"{b}\n" for b in body), comment))
                fence = None
            else:
                body.append(line)
            continue
        opened = _FENCE.match(line)
        if opened:
            fence, start, info, body = opened.group(2), number, opened.group(3), []
            before = next((lines[i] for i in range(number - 2, -1, -1) if lines[i].strip()), "")
            found = _COMMENT.match(before)
            comment = found.group(1) if found else ""
            continue
        heading = _HEADING.match(line)
        if heading:
            headings.append(heading.group(2))
        for target in _LINK.findall(_INLINE_CODE.sub("", line)):
            links.append(Link(page, number, target))
    assert fence is None, f"{page.relative_to(REPO)}:{start}: a code fence is never closed"
    return blocks, headings, links


def anchors(headings: list[str]) -> set[str]:
    """GitHub's anchors for these headings: lower case, punctuation dropped, spaces to hyphens,
    a repeated one suffixed -1, -2, ..."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for heading in headings:
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in read(page)[0]]


def block_run_by(test: str) -> str:
    """The text of the one bash block after `<!-- runs: <test> -->` (a test that runs a page's
    commands as written: `test` is its path, e.g. tests/e2e/test_registry.py)."""
    found = [block for block in all_blocks() if block.comment == f"runs: {test}"]
    assert len(found) == 1, f"{len(found)} blocks are marked <!-- runs: {test} -->"
    assert found[0].info == "bash", f"{found[0].where}: the block it runs must be ```bash"
    return found[0].text
