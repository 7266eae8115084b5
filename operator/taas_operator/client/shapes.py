"""Whether a program's own tf.distribute strategy fits the job's shape, where the text tells.

    shape_warnings(program, options) -> list[str]     # "warning: ..." lines, each with its fix

A program built on TaaS's trainer (`import taas`) gets the strategy of its shape, so it is never
warned about. A plain program that makes its own strategy fails inside TensorFlow when the shape
does not fit it, with words that do not name the job ("There is no id for task_type 'ps'" for a
MultiWorkerMirroredStrategy given parameter servers); the warning says it before anything runs.
Read from the text only (no import, nothing run): a strategy named in a comment also counts, so
this warns and never refuses.
"""

from __future__ import annotations

import re

from taas_operator.client.programoptions import ProgramOptions
from taas_operator.client.programs import Program

_USES_TAAS = re.compile(r"^\s*(from\s+taas(\.\w+)*\s+import|import\s+taas\b)", re.MULTILINE)
_MWMS = re.compile(r"\bMultiWorkerMirroredStrategy\b")
_PSS = re.compile(r"\bParameterServerStrategy\b")


def shape_warnings(program: Program, options: ProgramOptions) -> list[str]:
    """What TensorFlow would fail on, given the program's strategy and the job's shape."""
    if _USES_TAAS.search(program.text):
        return []
    name, found = program.file_name, []
    if _MWMS.search(program.text) and not _PSS.search(program.text) and options.ps:
        found.append(
            f"warning: {name} makes a MultiWorkerMirroredStrategy, which has no parameter "
            f'servers, and the job has {options.ps} PS: TensorFlow fails with "There is no id '
            f"for task_type 'ps'\"; fix: leave out --ps (all-reduce between the workers), or "
            f"use ParameterServerStrategy"
        )
    if _PSS.search(program.text) and not _MWMS.search(program.text) and not options.ps:
        found.append(
            f"warning: {name} makes a ParameterServerStrategy and the job has no PS: "
            f"TensorFlow finds no parameter server to place variables on; fix: add --ps 1 "
            f"(and --chief, its coordinator)"
        )
    return found
