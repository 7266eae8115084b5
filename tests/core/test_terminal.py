"""The terminal output shared by `taas run` and the client (`taas_operator.terminal.Display`),
and what `taas run` adds to it (`local.display.RunDisplay`): every line and engine event handed
to the run's observer too, the --logs-dir check."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from taas_operator.api import TFJob
from taas_operator.documents import InputError
from taas_operator.local.display import RunDisplay, logs_dir
from taas_operator.planner import Event
from taas_operator.terminal import Display, format_table

from .helpers import job


class Recorder:
    """An OutputObserver that keeps what it is handed."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str, bytes]] = []
        self.events: list[tuple[str, str, str, str]] = []

    def line(self, job: str, pod: str, raw: bytes) -> None:
        self.lines.append((job, pod, raw))

    def event(self, job: TFJob, type_: str, reason: str, message: str) -> None:
        self.events.append((job.name, type_, reason, message))


def test_lines_notes_and_a_table_printed_when_it_changes(tmp_path: Path) -> None:
    out = io.StringIO()
    display = Display(out, color=False, live=False, logs_dir=str(tmp_path))
    display.line("mnist", "mnist-worker-0", b"\x1b[31mstep 1\x1b[0m\r\n")
    display.note("started")
    display.warn("no GPU")
    display.table(["NAME   STATE", "a      Running"])
    display.table(["NAME   STATE", "a      Running"])  # unchanged: not printed again
    display.final("done\n")
    display.close()
    assert out.getvalue().splitlines() == [
        "[worker-0] step 1",
        "taas: started",
        "taas: warning: no GPU",
        "NAME   STATE",
        "a      Running",
        "done",
    ]
    assert (tmp_path / "mnist-worker-0.log").read_bytes() == b"\x1b[31mstep 1\x1b[0m\r\n"


def test_format_table_pads_like_kubectl() -> None:
    assert format_table(["NAME", "STATE"], [["mnist-worker-0", "Running"], ["ps", "-"]]) == [
        "NAME             STATE",
        "mnist-worker-0   Running",
        "ps               -",
    ]


def test_a_run_display_hands_lines_and_events_to_its_observer() -> None:
    out, seen = io.StringIO(), Recorder()
    display = RunDisplay(out, color=False, live=False, prefix_job=True, observer=seen)
    tfjob = job({"Worker": 1}, name="mnist")
    display.line("mnist", "mnist-worker-0", b"hello\n")
    display.event(tfjob, Event(type="Normal", reason="TFJobRunning", message="running"))
    assert seen.lines == [("mnist", "mnist-worker-0", b"hello\n")]
    assert seen.events == [("mnist", "Normal", "TFJobRunning", "running")]
    assert out.getvalue().splitlines() == [
        "[mnist/worker-0] hello",
        "taas: Normal TFJobRunning: running",
    ]


def test_logs_dir_that_is_a_file_is_refused_naming_the_flag(tmp_path: Path) -> None:
    taken = tmp_path / "file"
    taken.write_text("")
    with pytest.raises(InputError, match=r"--logs-dir .*file: not a directory; fix: "):
        logs_dir(str(taken))
    assert logs_dir(str(tmp_path / "new")).is_dir()
