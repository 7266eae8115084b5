"""The options of a program's TFJob (`taas submit PROGRAM.py`, `TFJobClient.create_job`),
checked before anything is made or sent.

    ProgramOptions(workers=2, ps=1, gpus_per_worker=1, env={"TF_MAX_STEPS": "400"})
    python_options(name, num_workers, ...) -> ProgramOptions   # Kubeflow SDK-style arguments
    check_options(options, names)                               # Invalid: every problem, named
    option_problems(options, names) -> [(option, message)]      # the same, each with its option

`names` says how the caller knows each option: `CLI_NAMES` (`--workers`) or `PYTHON_NAMES`
(`num_workers`), so a message names what the user typed and the fix. Replica counts are
bounded by the API's MAX_REPLICAS, GPUs by MAX_GPUS, quantities are read by the API's
`parse_quantity` (memory under 1Mi is refused: `512m` is half a byte), env names as Kubernetes
has always accepted them, never one of the variables TaaS sets (TF_CONFIG...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from taas_operator.api.constants import MAX_REPLICAS
from taas_operator.api.quantity import parse_quantity
from taas_operator.apiserver.errors import Invalid
from taas_operator.tfjob.cluster_spec import CLUSTER_ENV_NAMES

DEFAULT_IMAGE: Final = "ghcr.io/taas-dev/taas-trainer:0.1.0"
#: More GPUs than any node has: a pod asking for more would stay Pending for ever.
MAX_GPUS: Final = 64
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*\Z")
#: How each option is named to its caller, for messages.
CLI_NAMES: Final = {
    "program": "PROGRAM.py",
    "name": "--name",
    "workers": "--workers",
    "ps": "--ps",
    "chief": "--chief",
    "gpus_per_worker": "--gpus-per-worker",
    "image": "--image",
    "cpu": "--cpu",
    "memory": "--memory",
    "env": "--env",
}
PYTHON_NAMES: Final = {
    "program": "train_file",
    "name": "name",
    "workers": "num_workers",
    "ps": "num_ps_replicas",
    "chief": "num_chief_replicas",
    "gpus_per_worker": 'resources_per_worker["gpu"]',
    "image": "base_image",
    "cpu": 'resources_per_worker["cpu"]',
    "memory": 'resources_per_worker["memory"]',
    "env": "env",
}


@dataclass(frozen=True)
class ProgramOptions:
    """The shape of the job: replicas, image, resources, env, the program's arguments."""

    name: str | None = None
    workers: int = 1
    ps: int = 0
    chief: bool = False
    gpus_per_worker: int = 0
    image: str = DEFAULT_IMAGE
    cpu: str | None = None
    memory: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    args: Sequence[str] = ()


def python_options(
    name: str | None,
    num_workers: int,
    num_ps_replicas: int,
    num_chief_replicas: int,
    resources_per_worker: Mapping[str, Any] | None,
    base_image: str | None,
    env: Mapping[str, str] | None,
    args: Sequence[str],
) -> ProgramOptions:
    """`ProgramOptions` from Kubeflow SDK-style arguments (`create_job`'s): resources_per_worker
    {"cpu": "2", "memory": "4Gi", "gpu": 1}, num_chief_replicas 0 or 1."""
    resources = dict(resources_per_worker or {})
    unknown = sorted(str(k) for k in resources if k not in ("cpu", "memory", "gpu"))
    if unknown:
        raise Invalid(
            f"resources_per_worker: unknown key(s) {', '.join(unknown)}; fix: use 'cpu', "
            f"'memory' and 'gpu' (nvidia.com/gpu)"
        )
    if num_chief_replicas not in (0, 1) or isinstance(num_chief_replicas, bool):
        raise Invalid(f"num_chief_replicas {num_chief_replicas!r}: must be 0 or 1")
    gpus = resources.get("gpu", 0)
    if isinstance(gpus, str) and gpus.isdigit():
        gpus = int(gpus)
    if isinstance(args, str | bytes) or not all(isinstance(a, str) for a in args):
        raise Invalid(f"args {args!r}: must be a list of strings (the program's arguments)")
    return ProgramOptions(
        name=name,
        workers=num_workers,
        ps=num_ps_replicas,
        chief=bool(num_chief_replicas),
        gpus_per_worker=gpus,
        image=DEFAULT_IMAGE if base_image is None else base_image,
        cpu=_text(resources.get("cpu")),
        memory=_text(resources.get("memory")),
        env=dict(env) if isinstance(env, Mapping) else ({} if env is None else env),
        args=tuple(args),
    )


def _text(value: Any) -> Any:
    """A number as Kubernetes writes it ("2"), anything else as given (checked later)."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


class InvalidOptions(Invalid):
    """Problems of named options: `problems` holds (option, message), the option a key of
    `CLI_NAMES` ("workers"); the text is every message, joined."""

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        super().__init__("; ".join(message for _, message in problems))
        self.problems = list(problems)


def check_options(options: ProgramOptions, names: Mapping[str, str]) -> None:
    """InvalidOptions naming every problem of `options`, if any."""
    problems = option_problems(options, names)
    if problems:
        raise InvalidOptions(problems)


def option_problems(options: ProgramOptions, names: Mapping[str, str]) -> list[tuple[str, str]]:
    """Each problem of `options` as (option, message naming it as `names` says)."""
    found = {
        "workers": _count(options.workers, names["workers"], 0),
        "ps": _count(options.ps, names["ps"], 0),
        "gpus_per_worker": _count(options.gpus_per_worker, names["gpus_per_worker"], 0, MAX_GPUS),
        "image": _image(options.image, names["image"]),
        "cpu": _quantity(options.cpu, names["cpu"], "a CPU amount, e.g. 500m or 2"),
        "memory": _memory(options.memory, names["memory"]),
        "env": _env(options.env, names["env"]),
    }
    if not isinstance(options.chief, bool):
        found["chief"] = [f"{names['chief']}: must be 0 or 1 (one chief at most)"]
    problems = [(option, message) for option, messages in found.items() for message in messages]
    if not problems and options.workers + int(options.chief) < 1:
        problems.append(
            (
                "workers",
                f"{names['workers']}: no replica would train (0 workers and no chief); fix: "
                f"{names['workers']} 1 or more",
            )
        )
    return problems


def _count(value: Any, name: str, low: int, high: int = MAX_REPLICAS) -> list[str]:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return [f"{name} {value!r}: must be a whole number from {low} to {high}"]
    return []


def _image(value: Any, name: str) -> list[str]:
    if not isinstance(value, str) or not value or any(c.isspace() for c in value):
        return [
            f"{name} {value!r}: must be an image reference without spaces, e.g. "
            f"{DEFAULT_IMAGE} (the default)"
        ]
    return []


def _quantity(value: Any, name: str, example: str) -> list[str]:
    if value is None:
        return []
    amount = parse_quantity(value) if isinstance(value, str | int) else None
    if amount is None or amount <= 0:
        return [f"{name} {value!r}: must be {example} (a Kubernetes quantity above 0)"]
    return []


def _memory(value: Any, name: str) -> list[str]:
    found = _quantity(value, name, "an amount of memory, e.g. 2Gi or 512Mi")
    if not found and value is not None and (parse_quantity(value) or 0) < 1024 * 1024:
        return [
            f"{name} {value!r}: is less than 1Mi ('m' means thousandths of a byte); fix: "
            f"write mebibytes as Mi or gibibytes as Gi, e.g. 512Mi"
        ]
    return found


def _env(env: Any, name: str) -> list[str]:
    if not isinstance(env, Mapping):
        return [f"{name}: must map variable names to values"]
    problems = []
    for key, value in env.items():
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            problems.append(
                f"{name} {key!r}: not a variable name (letters, digits, '_', '-', '.', not "
                f"starting with a digit)"
            )
        elif key in CLUSTER_ENV_NAMES:
            problems.append(
                f"{name} {key}: TaaS sets {key} for each replica (the job's cluster); fix: "
                f"leave it out"
            )
        elif not isinstance(value, str):
            problems.append(f"{name} {key}: the value must be a string")
    return problems
