"""The Submit form's fields as the TFJob they make (and the ConfigMap of a program). Pure.

    made = made_of(body, namespace, sending)   # FormJob: tfjob, program (ProgramManifests) | None,
                                               # yaml; sending: an empty program is refused too
    # FormInvalid: problems [(field, message)], each message naming the form's label and the fix

The form is `taas submit PROGRAM.py`'s flags on a page (Caicloud's TaaS page had the same
fields): replicas, GPUs per worker, image, CPU and memory, env, and what every replica runs,
a Python program's text (shipped in a ConfigMap, as `taas submit train.py` ships a file) or a
command of the image. The TFJob and the ConfigMap are `client.programs`' (one builder for the
CLI, the Python client and this form), checked there as `taas validate` checks a file; the
options' messages name the form's labels (`FORM_NAMES`) so the page shows each by its field.

Bounds, before anything is built: the body is JSON of at most the server's submit size (the
server checks it), each text field has a length cap (`FormFields`), unknown fields are refused,
at most `MAX_ENV` variables; the program then as a ConfigMap holds it (1 MiB with its name).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taas_operator.apiserver.errors import Invalid
from taas_operator.client.programoptions import (
    DEFAULT_IMAGE,
    InvalidOptions,
    ProgramOptions,
    option_problems,
)
from taas_operator.client.programs import (
    MAX_CONFIG_MAP_BYTES,
    ProgramManifests,
    command_job,
    dump_manifests,
    dump_yaml,
    given_program,
    program_job,
)

#: Each option as the form labels it (the messages name these).
FORM_NAMES: Final = {
    "program": "Program",
    "name": "Name",
    "workers": "Workers",
    "ps": "PS",
    "chief": "Chief",
    "gpus_per_worker": "GPUs per worker",
    "image": "Image",
    "cpu": "CPU",
    "memory": "Memory",
    "env": "Env",
    "command": "Command",
    "args": "Arguments",
    "file_name": "File name",
    "runs": "Runs",
}
MAX_ENV = 256
_Count = int | Annotated[str, Field(max_length=20)]
_Line = Annotated[str, Field(max_length=16 * 1024)]


class FormFields(BaseModel):
    """What the page sends: each input's value (numbers as typed; blank: the default)."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(max_length=253)] = ""
    workers: _Count = 1
    ps: _Count = 0
    chief: bool = False
    gpus_per_worker: _Count = 0
    image: Annotated[str, Field(max_length=1024)] = ""
    cpu: Annotated[str, Field(max_length=64)] = ""
    memory: Annotated[str, Field(max_length=64)] = ""
    #: NAME=VALUE, one a line (as `taas submit --env` and `kubectl run --env` take them).
    env: Annotated[str, Field(max_length=64 * 1024)] = ""
    runs: Literal["program", "command"] = "program"
    file_name: Annotated[str, Field(max_length=253)] = "train.py"
    program: Annotated[str, Field(max_length=MAX_CONFIG_MAP_BYTES)] = ""
    #: The program's own arguments, a shell-quoted line (`taas submit train.py -- ARGS`).
    args: _Line = ""
    #: A command line of the image (shell-quoted), when `runs` is "command".
    command: _Line = ""


@dataclass(frozen=True)
class FormJob:
    """The TFJob made (checked), the program's manifests (None for a command), both as YAML."""

    tfjob: dict[str, Any]
    program: ProgramManifests | None
    yaml: str

    @property
    def name(self) -> str:
        return str(self.tfjob["metadata"]["name"])


class FormInvalid(Exception):
    """Problems of the form's fields: (field, message); field "" for the form as a whole."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(message for _, message in problems))
        self.problems = problems

    def answer(self) -> dict[str, Any]:
        """The 422 answer: {"error": every message, "problems": [{"field", "message"}]}."""
        listed = [{"field": field, "message": message} for field, message in self.problems]
        return {"error": str(self), "problems": listed}


def made_of(body: bytes | str, namespace: str, sending: bool = False) -> FormJob:
    """The job the form's JSON `body` makes in `namespace` (FormInvalid: every problem). An
    empty program previews (the form as it opens) but is not sent (`sending`)."""
    try:
        fields = FormFields.model_validate_json(body)
    except ValidationError as err:
        raise FormInvalid([_pydantic_problem(e) for e in err.errors()]) from None
    options, problems = _options(fields)
    problems += option_problems(options, FORM_NAMES)
    if fields.runs == "command":
        command = _split(fields.command, "command", problems)
        if not fields.name.strip():
            problems.append(("name", "Name: needed for a command; fix: e.g. train"))
    else:
        try:
            program = given_program(fields.file_name.strip(), fields.program, FORM_NAMES)
        except InvalidOptions as err:
            problems += [("file_name" if "file name" in m else f, m) for f, m in err.problems]
        if sending and not fields.program.strip():
            problems.append(("program", "Program: empty; fix: paste it, or upload its .py file"))
    if problems:
        raise FormInvalid(problems)
    try:
        if fields.runs == "command":
            tfjob, _ = command_job(command, options, FORM_NAMES, namespace)
            return FormJob(tfjob, None, dump_manifests(tfjob))
        made = program_job(program, options, FORM_NAMES, namespace)
        return FormJob(made.tfjob, made, dump_yaml(made))
    except InvalidOptions as err:
        raise FormInvalid(err.problems) from None
    except Invalid as err:
        raise FormInvalid([("", str(err))]) from None


def _options(fields: FormFields) -> tuple[ProgramOptions, list[tuple[str, str]]]:
    """ProgramOptions from the fields (blank: the default), and the problems of parsing them."""
    problems: list[tuple[str, str]] = []
    env = _env(fields.env, problems)
    args = _split(fields.args, "args", problems) if fields.runs == "program" else []
    options = ProgramOptions(
        name=fields.name.strip() or None,
        workers=_count(fields.workers, 1),
        ps=_count(fields.ps, 0),
        chief=fields.chief,
        gpus_per_worker=_count(fields.gpus_per_worker, 0),
        image=fields.image.strip() or DEFAULT_IMAGE,
        cpu=fields.cpu.strip() or None,
        memory=fields.memory.strip() or None,
        env=env,
        args=tuple(args),
    )
    return options, problems


def _count(value: int | str, default: int) -> Any:
    """A whole number as typed; anything else as given, for the options' check to name."""
    if isinstance(value, int):
        return value
    text = value.strip()
    return default if not text else int(text) if text.isdigit() else text


def _env(text: str, problems: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if len(lines) > MAX_ENV:
        problems.append(("env", f"Env: {len(lines)} variables; fix: at most {MAX_ENV}"))
        return env
    for number, line in lines:
        name, equals, value = line.partition("=")
        if not equals or not name:
            problems.append(
                (
                    "env",
                    f"Env line {number} {line[:80]!r}: not NAME=VALUE; fix: e.g. TF_MAX_STEPS=400",
                )
            )
        elif name in env:
            problems.append(("env", f"Env {name}: given twice; fix: give each variable once"))
        else:
            env[name] = value
    return env


def _split(line: str, field: str, problems: list[tuple[str, str]]) -> list[str]:
    """A shell-quoted line as its words (`shlex`, as a shell splits it; nothing runs it)."""
    try:
        return shlex.split(line)
    except ValueError as err:
        label = FORM_NAMES[field]
        problems.append(
            (field, f"{label}: {err} (a quote left open); fix: close it, or escape it with \\")
        )
        return []


def _pydantic_problem(error: Any) -> tuple[str, str]:
    where = [str(part) for part in error.get("loc", ())]
    field = where[0] if where else ""
    label = FORM_NAMES.get(field, field) or "the form"
    if error.get("type") == "json_invalid":
        return "", "the form: not JSON; fix: send the fields as one JSON object"
    if error.get("type") == "extra_forbidden":
        return field, f"{label}: no such field of the form; fix: leave it out"
    return field, f"{label}: {error.get('msg', 'invalid')}"
