"""`Parts`, the base of everything started and stopped as one (a control plane, a cluster, a
simulated cluster, the schedulers, Katib, storage), and the log tail their start-up errors quote.

    class MyParts(Parts):
        def start(self) -> Self: ...       # start every process; raise with log_tail(log)
        def stop(self) -> None: ...        # stop them, also after a failed start
    with MyParts() as parts: ...           # started here, stopped at the end
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Self


class Parts:
    """Processes started and stopped together; `with parts:` starts them, then stops them."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def log_tail(path: Path, lines: int = 25) -> str:
    """The last `lines` lines of a part's log file ("" when it cannot be read), for the message
    that says why the part did not start."""
    try:
        return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])
    except OSError:
        return ""
