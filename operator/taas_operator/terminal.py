"""A job's output in a terminal: replica log lines, notes, and a live table kept at the bottom.
Shared by `taas run` (local.display adds its observer and the planner's events) and the client's
`taas submit` / `taas logs` (client.console).

    Display(stream, color: bool, live: bool, logs_dir: str | None, prefix_job: bool)
        .line(job, pod, raw: bytes)   one log line of a replica: `[worker-0] ...`, coloured;
                                      also appended to `<logs_dir>/<pod>.log` when given
        .note(text)                   a message of taas itself: `taas: ...`
        .warn(text)                   a warning: `taas: warning: ...`
        .table(lines)                 the table; redrawn in place on a TTY
        .final(text)  .close()
    format_table(header, rows) -> list[str]   # columns padded like kubectl get's

On a TTY the table is a footer: it is erased, the new log lines are written above it, and it is
drawn again, so logs scroll and the table stays at the bottom. Elsewhere (a pipe, CI) the table
is printed as plain lines each time it changes. Thread-safe: replica log threads call `line`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from taas_operator.api.text import printable

_COLORS = ("36", "33", "35", "32", "34", "91", "96", "93", "95", "92", "94")
_RESET = "\x1b[0m"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded like kubectl get's output; control characters in a cell (status text
    someone else wrote) are shown escaped (`api.text.printable`)."""
    rows = [[printable(cell) for cell in row] for row in rows]
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    return [
        "   ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
        for r in (header, *rows)
    ]


class Display:
    """Serialises every write to the terminal; keeps the table as a footer on a TTY."""

    def __init__(
        self,
        stream: IO[str],
        *,
        color: bool,
        live: bool,
        logs_dir: str | None = None,
        prefix_job: bool = False,
    ) -> None:
        self.stream, self.color, self.live, self.prefix_job = stream, color, live, prefix_job
        self.logs_dir = Path(logs_dir) if logs_dir else None
        self._lock = threading.Lock()
        self._colors: dict[str, str] = {}
        self._files: dict[str, IO[bytes]] = {}
        self._footer: list[str] = []
        self._last_table: list[str] = []

    def _erase_footer(self) -> None:
        if self.live and self._footer:
            self.stream.write(f"\x1b[{len(self._footer)}F\x1b[J")

    def _draw_footer(self) -> None:
        if self.live and self._footer:
            self.stream.write("\n".join(self._footer) + "\n")

    def _write(self, text: str) -> None:
        self._erase_footer()
        self.stream.write(text)
        self._draw_footer()
        self.stream.flush()

    def _label(self, job: str, pod: str) -> str:
        short = pod[len(job) + 1 :] if pod.startswith(job + "-") else pod
        label = f"[{job}/{short}]" if self.prefix_job else f"[{short}]"
        if not self.color:
            return label
        code = self._colors.setdefault(pod, _COLORS[len(self._colors) % len(_COLORS)])
        return f"\x1b[{code}m{label}{_RESET}"

    def line(self, job: str, pod: str, raw: bytes, show: bool = True) -> None:
        """One output line of a replica: to its log file, and (``show``) to the terminal."""
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        with self._lock:
            if self.logs_dir is not None:
                file = self._files.get(pod)
                if file is None:
                    file = self._files[pod] = open(self.logs_dir / f"{pod}.log", "ab")  # noqa: SIM115
                file.write(raw if raw.endswith(b"\n") else raw + b"\n")
                file.flush()
            if not show:
                return
            if not self.color:
                text = _ANSI.sub("", text)
            self._write(f"{self._label(job, pod)} {text}\n")

    def note(self, text: str) -> None:
        """A message of taas itself."""
        with self._lock:
            label = "\x1b[1mtaas:\x1b[0m" if self.color else "taas:"
            self._write(f"{label} {text}\n")

    def warn(self, text: str) -> None:
        """A warning: something runs differently than asked, or unprotected."""
        self.note(f"warning: {text}")

    def table(self, lines: list[str]) -> None:
        """Show the table: redraw the footer on a TTY, else print it when it changed."""
        with self._lock:
            if lines == self._last_table:
                return
            self._last_table = list(lines)
            if self.live:
                self._erase_footer()
                self._footer = list(lines)
                self._draw_footer()
                self.stream.flush()
            else:
                self.stream.write("\n".join(lines) + "\n")
                self.stream.flush()

    def final(self, text: str) -> None:
        """Drop the footer and print the final report."""
        with self._lock:
            self._erase_footer()
            self._footer = []
            self.stream.write(text)
            self.stream.flush()

    def close(self) -> None:
        """Close the log files."""
        with self._lock:
            for file in self._files.values():
                file.close()
            self._files.clear()
