"""A TFJob that runs one local Python program, shipped in a ConfigMap its pods mount. Pure.

    options = ProgramOptions(workers=2, ps=1, gpus_per_worker=1)   # client.programoptions
    program = read_program("train.py", CLI_NAMES)        # bounded, UTF-8; Invalid names the fix
    program = given_program("train.py", text, names)     # the same checks for a text given
    made = program_job(program, options, CLI_NAMES, namespace=None)
    made.tfjob, made.config_map                           # manifests; the TFJob checked as
                                                          # `taas validate` checks a file
    command_job(["python", "x.py"], options, names, ns)   # a command of the image: no ConfigMap
    owned_config_map(made.config_map, created_job)        # + the ownerReference to its uid
    local_job(path, program, options) -> TFJob            # `taas run`: the file where it is

Every replica runs `python /opt/taas/program/<file> [ARGS...]` in the trainer image (or `image`),
the ConfigMap `<job>-program` mounted read-only at /opt/taas/program; TF_CONFIG and the classic
variables come from the operator as for any TFJob; `TF_CPP_MIN_LOG_LEVEL=1` unless `env` sets it
(`QUIET_TF`; `taas run`'s own filter, local.noise, leaves the user's env alone). The pods follow the
restricted Pod Security Standard as the examples do (a non-root image), restartPolicy ExitCode (an
evicted replica is recreated, a program error fails the job), cleanPodPolicy Running. `cpu` and
`memory` are each replica's requests and limits; `gpus_per_worker` is the `nvidia.com/gpu` limit of
each Worker and the Chief (a PS holds variables on its CPU).

A command instead of a program (the dashboard's form) makes the same TFJob, each replica running
the command in the image (`options.args` unused), with no ConfigMap and no volume.

Bad input is one `Invalid` naming the option as its caller knows it (`CLI_NAMES`: `--workers`;
`PYTHON_NAMES`: `num_workers`; the form's labels) and the fix, before anything is sent: the
options (client.programoptions), a program past what a ConfigMap holds (1 MiB: build an image,
docs/deploy.md), a file name that cannot be a ConfigMap key or give a TFJob name. Those are an
`InvalidOptions`, whose `problems` say which option each is about (the form marks its fields).

Why the ConfigMap first, then the TFJob, then the ConfigMap's ownerReference
(client.jobs.create_program): the pods mount whatever ConfigMap holds the name, so one made in
advance by someone else (who may create ConfigMaps in the namespace) would run as the program;
made first, an existing one is refused before any TFJob or pod exists. Its ownerReference
needs the TFJob's uid, so it is patched in once the TFJob exists; if the TFJob cannot be made,
the ConfigMap is deleted again (by uid).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from taas_operator.api import TFJob
from taas_operator.api.constants import API_VERSION, DEFAULT_CONTAINER_NAME, KIND, LABEL_JOB_NAME
from taas_operator.apiserver.errors import Invalid
from taas_operator.client.programoptions import (
    CLI_NAMES,
    InvalidOptions,
    ProgramOptions,
    check_options,
)
from taas_operator.documents import InputError, parse_tfjobs

PROGRAM_DIR: Final = "/opt/taas/program"
#: A ConfigMap's data, keys and values together (apiserver's ValidateConfigMap: 1 MiB).
MAX_CONFIG_MAP_BYTES: Final = 1024 * 1024
GPU_RESOURCE: Final = "nvidia.com/gpu"
IMAGE_FIX: Final = (
    "build an image FROM the trainer image with your code copied in (docs/deploy.md, Images)"
)
_CONFIG_MAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+\Z")
_VOLUME = "program"
#: What `taas submit` sets for TensorFlow's own log level, unless the user's env does.
QUIET_TF = ("TF_CPP_MIN_LOG_LEVEL", "1")


@dataclass(frozen=True)
class Program:
    """A program file's name (the ConfigMap key) and its text."""

    file_name: str
    text: str


@dataclass(frozen=True)
class ProgramManifests:
    """The TFJob (checked) and the ConfigMap holding the program (no owner yet)."""

    tfjob: dict[str, Any]
    config_map: dict[str, Any]
    job: TFJob


def read_program(path: str | os.PathLike[str], names: Mapping[str, str] = CLI_NAMES) -> Program:
    """The program at `path`: a `.py` file whose name is a ConfigMap key, UTF-8, small enough
    for a ConfigMap (never reads more than that, plus one byte)."""
    file = Path(path)
    what = f"{names['program']} {str(path)!r}"
    _check_file_name(file.name, what)
    room = MAX_CONFIG_MAP_BYTES - len(file.name)
    try:
        with file.open("rb") as stream:
            data = stream.read(room + 1)
    except IsADirectoryError:
        raise Invalid(f"{what} is a directory; fix: give the program's .py file") from None
    except FileNotFoundError:
        raise Invalid(f"{what} does not exist; fix: check the path") from None
    except OSError as err:
        raise Invalid(f"{what} cannot be read: {err.strerror or err}") from None
    if len(data) > room:
        raise Invalid(_too_large(what))
    try:
        return Program(file.name, data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise Invalid(
            f"{what} is not UTF-8 text ({err.reason} at byte {err.start}); fix: save it as UTF-8"
        ) from None


def given_program(file_name: str, text: str, names: Mapping[str, str] = CLI_NAMES) -> Program:
    """A program's text given as it is (pasted, uploaded), checked as `read_program` checks a
    file; InvalidOptions on the option "program"."""
    what = f"{names['program']} {file_name!r}"
    try:
        _check_file_name(file_name, what)
        if len(file_name) + len(text.encode("utf-8", "surrogatepass")) > MAX_CONFIG_MAP_BYTES:
            raise Invalid(_too_large(what))
    except Invalid as err:
        raise InvalidOptions([("program", str(err))]) from None
    return Program(file_name, text)


def _check_file_name(file_name: str, what: str) -> None:
    if not file_name.endswith(".py"):
        raise Invalid(f"{what} is not a Python program (.py); fix: give the program's .py file")
    if not _CONFIG_MAP_KEY.match(file_name) or len(file_name) > 253:
        raise Invalid(
            f"{what}: its file name cannot be a ConfigMap key (letters, digits, '-', '_' and "
            f"'.' only); fix: rename the file, e.g. {_key_like(file_name)!r}"
        )


def _too_large(what: str) -> str:
    return (
        f"{what} is larger than a ConfigMap holds ({MAX_CONFIG_MAP_BYTES} bytes, 1 MiB, with "
        f"its file name); fix: {IMAGE_FIX}"
    )


def program_job(
    program: Program,
    options: ProgramOptions,
    names: Mapping[str, str] = CLI_NAMES,
    namespace: str | None = None,
) -> ProgramManifests:
    """The TFJob running `program` with `options`, checked as `taas validate` checks a file,
    and the ConfigMap holding the program. `namespace` None: the manifests name none."""
    check_options(options, names)
    name = options.name or job_name(program.file_name)
    runs = ["python", f"{PROGRAM_DIR}/{program.file_name}", *options.args]
    tfjob = _tfjob(name, namespace, runs, _quiet(options), mounted=True)
    job = _validated(tfjob, options, names, program.file_name)
    meta: dict[str, Any] = {"name": config_map_name(name), "labels": {LABEL_JOB_NAME: name}}
    if namespace:
        meta["namespace"] = namespace
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": {program.file_name: program.text},
    }
    return ProgramManifests(tfjob, config_map, job)


def command_job(
    command: Sequence[str],
    options: ProgramOptions,
    names: Mapping[str, str] = CLI_NAMES,
    namespace: str | None = None,
) -> tuple[dict[str, Any], TFJob]:
    """The TFJob whose replicas run `command` (a command line of the image, e.g. `python
    examples/mnist/mnist.py`), checked as `program_job`'s; its manifest and model. `options.name`
    is needed (no file to name the job after)."""
    check_options(options, names)
    problems = []
    if not command:
        problems.append(
            (
                "command",
                f"{names.get('command', 'command')}: empty; fix: the command every replica runs",
            )
        )
    if not options.name:
        problems.append(("name", f"{names['name']}: needed for a command; fix: e.g. train"))
    if problems:
        raise InvalidOptions(problems)
    tfjob = _tfjob(str(options.name), namespace, list(command), _quiet(options), mounted=False)
    return tfjob, _validated(tfjob, options, names, "")


def local_job(
    path: str | os.PathLike[str],
    program: Program,
    options: ProgramOptions,
    names: Mapping[str, str] = CLI_NAMES,
    namespace: str | None = None,
) -> TFJob:
    """The same TFJob for `taas run` on this machine: each replica runs the file where it is
    (`path`), no ConfigMap and no volume."""
    check_options(options, names)
    name = options.name or job_name(program.file_name)
    runs = ["python", str(Path(path).resolve()), *options.args]
    tfjob = _tfjob(name, namespace, runs, options, mounted=False)
    return _validated(tfjob, options, names, program.file_name)


def _quiet(options: ProgramOptions) -> ProgramOptions:
    """`options` with TensorFlow's C++ log level at 1 (warnings and errors) unless the user set
    one: its INFO lines (a session's device dump, about 20 lines a replica, and "Local rendezvous
    is aborting" at each end of a dataset) would otherwise fill `taas submit`'s terminal."""
    if QUIET_TF[0] in options.env:
        return options
    return dataclasses.replace(options, env={**options.env, QUIET_TF[0]: QUIET_TF[1]})


def owned_config_map(config_map: dict[str, Any], job: TFJob) -> dict[str, Any]:
    """`config_map` owned by the created `job` (its uid): it goes when the job is deleted. Not
    a controller reference (the operator neither made nor manages it) and not blocking (no
    right on the TFJob's finalizers needed)."""
    meta = {**config_map["metadata"], "namespace": job.namespace}
    reference = {"apiVersion": API_VERSION, "kind": KIND, "name": job.name}
    meta["ownerReferences"] = [{**reference, "uid": job.metadata.uid or ""}]
    return {**config_map, "metadata": meta}


def config_map_name(job: str) -> str:
    return f"{job}-program"


def job_name(file_name: str) -> str:
    """The TFJob's name from the program's file name: `my_train.py` -> `my-train`."""
    return re.sub(r"[_.]", "-", Path(file_name).stem.lower())


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the program) as `|` blocks, the way kubectl prints them."""


def _block(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _block)


def dump_yaml(manifests: ProgramManifests) -> str:
    """Both manifests as `kubectl create --dry-run=client -o yaml` prints several objects."""
    return dump_manifests(manifests.tfjob, manifests.config_map)


def dump_manifests(*manifests: dict[str, Any]) -> str:
    """Manifests as YAML documents, multi-line strings as `|` blocks."""
    return "---\n".join(
        yaml.dump(m, Dumper=_Dumper, sort_keys=False, allow_unicode=True) for m in manifests
    )


# -- the TFJob -----------------------------------------------------------------------------------
def _tfjob(
    name: str, namespace: str | None, command: list[str], options: ProgramOptions, mounted: bool
) -> dict[str, Any]:
    """The TFJob whose replicas run `command`; `mounted`: with the program's ConfigMap."""
    replicas = {"Chief": int(options.chief), "PS": options.ps, "Worker": options.workers}
    specs = {
        rtype: {
            "replicas": count,
            "restartPolicy": "ExitCode",
            "template": _template(name, command, options, rtype != "PS", mounted),
        }
        for rtype, count in replicas.items()
        if count
    }
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": meta,
        "spec": {"runPolicy": {"cleanPodPolicy": "Running"}, "tfReplicaSpecs": specs},
    }


def _template(
    name: str, command: list[str], options: ProgramOptions, gpus: bool, mounted: bool
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": DEFAULT_CONTAINER_NAME,
        "image": options.image,
        "command": list(command),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    if mounted:
        container["volumeMounts"] = [{"name": _VOLUME, "mountPath": PROGRAM_DIR, "readOnly": True}]
    if options.env:
        container["env"] = [{"name": k, "value": v} for k, v in options.env.items()]
    resources = _resources(options, gpus)
    if resources:
        container["resources"] = resources
    spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
    }
    if mounted:
        spec["volumes"] = [{"name": _VOLUME, "configMap": {"name": config_map_name(name)}}]
    return {"spec": spec}


def _resources(options: ProgramOptions, gpus: bool) -> dict[str, Any]:
    amounts = {k: v for k, v in (("cpu", options.cpu), ("memory", options.memory)) if v}
    limits: dict[str, Any] = dict(amounts)
    if gpus and options.gpus_per_worker:
        limits[GPU_RESOURCE] = options.gpus_per_worker
    resources: dict[str, Any] = {}
    if amounts:
        resources["requests"] = amounts
    if limits:
        resources["limits"] = limits
    return resources


def _validated(
    tfjob: dict[str, Any], options: ProgramOptions, names: Mapping[str, str], file_name: str
) -> TFJob:
    """The TFJob as `taas validate` reads it; a name it refuses is said as the name's problem."""
    try:
        return parse_tfjobs(yaml.safe_dump(tfjob), "the TFJob made")[0]
    except InputError as err:
        text = str(err)
    line = next((x for x in text.splitlines() if x.startswith("* metadata.name:")), None)
    if line is not None:
        made = f"the name {tfjob['metadata']['name']!r} made from {file_name!r}"
        given = f"{names['name']} {options.name!r}" if options.name else made
        reason = line.removeprefix("* metadata.name:").split("; fix:")[0].strip()
        flag = names["name"]
        example = (
            f"{flag} NAME, e.g. {flag} train"
            if flag.startswith("-")
            else f'{flag}="train"'
            if flag.isidentifier() and flag.islower()
            else f"a {flag} such as train"
        )
        raise InvalidOptions([("name", f"{given} cannot name the TFJob: {reason}; fix: {example}")])
    raise Invalid(text)


def _key_like(file_name: str) -> str:
    return re.sub(r"[^-._a-zA-Z0-9]+", "_", file_name)
