"""A TFJob that runs one local Python program, shipped in a ConfigMap its pods mount. Pure.

    options = ProgramOptions(workers=2, ps=1, gpus_per_worker=1)   # client.programoptions
    program = read_program("train.py", CLI_NAMES)        # bounded, UTF-8; Invalid names the fix
    made = program_job(program, options, CLI_NAMES, namespace=None)
    made.tfjob, made.config_map                           # manifests; the TFJob checked as
                                                          # `taas validate` checks a file
    owned_config_map(made.config_map, created_job)        # + the ownerReference to its uid
    local_job(path, program, options) -> TFJob            # `taas run`: the file where it is

Every replica runs `python /opt/taas/program/<file> [ARGS...]` in the trainer image (or
`image`), the ConfigMap `<job>-program` mounted read-only at /opt/taas/program; TF_CONFIG and
the classic variables come from the operator as for any TFJob. The pods follow the restricted
Pod Security Standard as the examples do (a non-root image), restartPolicy ExitCode (an evicted
replica is recreated, a program error fails the job), cleanPodPolicy Running. `cpu` and
`memory` are each replica's requests and limits; `gpus_per_worker` is the `nvidia.com/gpu` limit
of each Worker and the Chief (a PS holds variables on its CPU).

Bad input is one `Invalid` naming the option as its caller knows it (`CLI_NAMES`: `--workers`;
`PYTHON_NAMES`: `num_workers`) and the fix, before anything is sent: the options
(client.programoptions), a program past what a ConfigMap holds (1 MiB: build an image,
docs/deploy.md), a file name that cannot be a ConfigMap key or give a TFJob name.

Why the TFJob first and the ConfigMap after (client.jobs.create_program): the ConfigMap's
ownerReference needs the TFJob's uid, which exists only once the TFJob does, and a pod started
before its ConfigMap waits in ContainerCreating until the volume can be mounted (the kubelet
retries), so nothing is lost; if the ConfigMap cannot be made, the TFJob is deleted again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from taas_operator.api import TFJob
from taas_operator.api.constants import API_VERSION, DEFAULT_CONTAINER_NAME, KIND, LABEL_JOB_NAME
from taas_operator.apiserver.errors import Invalid
from taas_operator.client.programoptions import CLI_NAMES, ProgramOptions, check_options
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
    if file.suffix != ".py":
        raise Invalid(f"{what} is not a Python program (.py); fix: give the program's .py file")
    if not _CONFIG_MAP_KEY.match(file.name) or len(file.name) > 253:
        raise Invalid(
            f"{what}: its file name cannot be a ConfigMap key (letters, digits, '-', '_' and "
            f"'.' only); fix: rename the file, e.g. {_key_like(file.name)!r}"
        )
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
        raise Invalid(
            f"{what} is larger than a ConfigMap holds ({MAX_CONFIG_MAP_BYTES} bytes, 1 MiB, with "
            f"its file name); fix: {IMAGE_FIX}"
        )
    try:
        return Program(file.name, data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise Invalid(
            f"{what} is not UTF-8 text ({err.reason} at byte {err.start}); fix: save it as UTF-8"
        ) from None


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
    tfjob = _tfjob(name, namespace, f"{PROGRAM_DIR}/{program.file_name}", options)
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
    local = str(Path(path).resolve())
    return _validated(_tfjob(name, namespace, local, options), options, names, program.file_name)


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
    return "---\n".join(
        yaml.dump(m, Dumper=_Dumper, sort_keys=False, allow_unicode=True)
        for m in (manifests.tfjob, manifests.config_map)
    )


# -- the TFJob -----------------------------------------------------------------------------------
def _tfjob(name: str, namespace: str | None, runs: str, options: ProgramOptions) -> dict[str, Any]:
    """The TFJob whose replicas run `python <runs>`: the mounted file, or a local one."""
    replicas = {"Chief": int(options.chief), "PS": options.ps, "Worker": options.workers}
    specs = {
        rtype: {
            "replicas": count,
            "restartPolicy": "ExitCode",
            "template": _template(name, runs, options, gpus=rtype != "PS"),
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


def _template(name: str, runs: str, options: ProgramOptions, gpus: bool) -> dict[str, Any]:
    mounted = runs.startswith(f"{PROGRAM_DIR}/")
    container: dict[str, Any] = {
        "name": DEFAULT_CONTAINER_NAME,
        "image": options.image,
        "command": ["python", runs, *options.args],
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
        example = f"{flag} NAME, e.g. {flag} train" if flag.startswith("-") else f'{flag}="train"'
        raise Invalid(f"{given} cannot name the TFJob: {reason}; fix: {example}")
    raise Invalid(text)


def _key_like(file_name: str) -> str:
    return re.sub(r"[^-._a-zA-Z0-9]+", "_", file_name)
