"""What `taas run` leaves off the terminal from its replicas' output: TensorFlow's start-up
notices and the ParameterServerStrategy chief's lines for a lost worker, each explained once.

    NoiseFilter().judge(pod, text) -> Verdict(show: bool, note: str | None)

Environment variables cannot silence the start-up notices: TensorFlow 2.21 writes them before
its logging starts, whatever ``TF_CPP_MIN_LOG_LEVEL`` says (twice: two of its libraries each
print them). On a CPU-only machine they are: the absl notice, oneDNN's, "Could not find cuda
drivers" and then "failed call to cuInit" (an error line for the same missing driver), the CPU
instructions notice. A ParameterServerStrategy chief that loses a worker writes "Failed to
register/remove function remotely" for every function it makes while the worker is gone (118
lines for one SIGKILLed worker). Each kind is named once in a note; the replicas' log files
(``--logs-dir``) and the dashboard keep every line. Every other line, errors included, shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

STARTUP = (
    "All log messages before absl::InitializeLog() is called are written to STDERR",
    "oneDNN custom operations are on",
    "This TensorFlow binary is optimized to use available CPU instructions",
    "To enable the following instructions:",
    "Could not find cuda drivers on your machine",
)
NO_DRIVER = "Could not find cuda drivers on your machine"
CUINIT = "failed call to cuInit"
REMOTE_FUNCTIONS = ("Failed to register function remotely", "Failed to remove function remotely")

STARTUP_NOTE = (
    "TensorFlow's start-up notices (oneDNN, CPU instructions, no CUDA driver) are left off "
    "here; the log files keep them"
)
NO_DRIVER_NOTE = "{pod}: no CUDA driver on this machine: TensorFlow runs on the CPU only"
REMOTE_NOTE = (
    "{pod}: a worker is unreachable; TensorFlow writes 'Failed to register/remove function "
    "remotely' for each function while it is gone (ParameterServerStrategy moves its steps to "
    "the other workers): shown once, the log file keeps every line"
)


class Verdict(NamedTuple):
    show: bool
    note: str | None = None


@dataclass
class NoiseFilter:
    """One run's filter: the notes already given, the pods seen without a driver."""

    noted: set[str] = field(default_factory=set)
    no_driver: set[str] = field(default_factory=set)

    def judge(self, pod: str, text: str) -> Verdict:
        """Whether the terminal shows ``text`` (a line of ``pod``), and a note to give first."""
        if any(marker in text for marker in STARTUP):
            note = None
            if NO_DRIVER in text and pod not in self.no_driver:
                self.no_driver.add(pod)
                note = NO_DRIVER_NOTE.format(pod=pod)
            return Verdict(False, note or self._once("startup", STARTUP_NOTE))
        if CUINIT in text and pod in self.no_driver:  # the same missing driver, as an error
            return Verdict(False)
        if any(marker in text for marker in REMOTE_FUNCTIONS):
            key = f"remote:{pod}"
            return Verdict(key not in self.noted, self._once(key, REMOTE_NOTE.format(pod=pod)))
        return Verdict(True)

    def _once(self, key: str, note: str) -> str | None:
        if key in self.noted:
            return None
        self.noted.add(key)
        return note
