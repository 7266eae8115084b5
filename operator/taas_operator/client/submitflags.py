"""`taas submit`'s flags for a program's job, and how it tells a program from a manifest.

    is_program(path) -> bool                  # PROGRAM.py; JOB.yaml/.yml/.json or `-` otherwise
    check_manifest_flags(args, path)          # a program's flags given with a manifest: refused
    add_program_arguments(parser)             # --name --workers --ps --chief --gpus-per-worker
                                              # --image --cpu --memory --env (kubectl run's form)
    program_options(args) -> ProgramOptions   # from the parsed flags (checked: programoptions)
    program_arguments(argv) -> (argv, ARGS)   # `taas submit|run ... -- ARGS`: the program's

Each problem is a ClientError (or argparse's usage error) naming the flag and the fix: exit 2.
"""

from __future__ import annotations

import argparse

from taas_operator.client.errors import ClientError
from taas_operator.client.programoptions import CLI_NAMES, DEFAULT_IMAGE, ProgramOptions

#: What `taas submit` takes: a program by its extension, a manifest by these (or `-`, stdin).
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
#: The flags of a program's job (args key -> flag), refused with a manifest.
PROGRAM_FLAGS = {**{k: v for k, v in CLI_NAMES.items() if k != "program"}, "program_args": "ARGS"}


def is_program(path: str) -> bool:
    """A Python program (by its extension); else a manifest, or a ClientError naming both."""
    if path.endswith(".py"):
        return True
    if path != "-" and not path.lower().endswith(MANIFEST_SUFFIXES):
        raise ClientError(
            f"{path!r} is neither a TFJob manifest (.yaml, .yml, .json; '-' reads stdin) "
            f"nor a Python program (.py); fix: give the file one of those extensions"
        )
    return False


def check_manifest_flags(args: argparse.Namespace, path: str) -> None:
    """Refuse a program's flags given with the manifest `path` (it says all of that)."""
    given = [flag for key, flag in PROGRAM_FLAGS.items() if getattr(args, key) not in (None, [])]
    if given:
        raise ClientError(
            f"{', '.join(given)}: for a program (taas submit PROGRAM.py ...), not a manifest; "
            f"fix: set the replicas, image, resources and env in {path} (spec.tfReplicaSpecs)"
        )


def program_options(args: argparse.Namespace) -> ProgramOptions:
    """The options the flags give (unset ones keep ProgramOptions' defaults)."""
    pairs = args.env or []
    names = [name for name, _ in pairs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ClientError(f"--env {', '.join(twice)}: given twice; fix: give each variable once")
    given = {
        key: value
        for key, value in vars(args).items()
        if key in PROGRAM_FLAGS and key not in ("env", "program_args") and value is not None
    }
    return ProgramOptions(**given, env=dict(pairs), args=tuple(args.program_args or ()))


def add_program_arguments(submit: argparse.ArgumentParser) -> None:
    """The flags of a program's job, as their own group of `taas submit --help`."""
    program = submit.add_argument_group("a program's job (PROGRAM.py only)")
    program.add_argument(
        "--name", help="the TFJob's name (default: the file's, my_train.py -> my-train)"
    )
    program.add_argument("--workers", type=_whole, metavar="N", help="Worker replicas (default 1)")
    program.add_argument("--ps", type=_whole, metavar="N", help="parameter servers (default 0)")
    program.add_argument(
        "--chief",
        action="store_const",
        const=True,
        help="also one Chief replica (the coordinator of ParameterServerStrategy)",
    )
    program.add_argument(
        "--gpus-per-worker",
        type=_whole,
        metavar="N",
        help="nvidia.com/gpu limit of each Worker and the Chief (default 0)",
    )
    program.add_argument(
        "--image",
        help=f"the replicas' image (default {DEFAULT_IMAGE}, which has TensorFlow and taas)",
    )
    program.add_argument(
        "--cpu", metavar="Q", help="CPU of each replica, request and limit (e.g. 2 or 500m)"
    )
    program.add_argument(
        "--memory", metavar="Q", help="memory of each replica, request and limit (e.g. 4Gi)"
    )
    program.add_argument(
        "--env",
        action="append",
        type=_variable,
        metavar="NAME=VALUE",
        help="a variable of every replica (repeatable)",
    )


def _whole(text: str) -> int:
    """A whole number >= 0 (argparse names the flag before the message)."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; fix: e.g. 2")
    return int(text)


def _variable(text: str) -> tuple[str, str]:
    """NAME=VALUE, as kubectl run's --env."""
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE; fix: e.g. TF_MAX_STEPS=400")
    return name, value


def program_arguments(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """`taas submit|run ... -- ARGS`: (the arguments for the parser, ARGS or None). argparse
    cannot take positionals after options and `--` once the file was read, hence the cut.
    kubectl's `--dry-run=client` is read as `--dry-run` (a flag, so `taas submit --dry-run
    train.py` keeps its file)."""
    if argv[:1] not in (["submit"], ["run"]):
        return argv, None
    cut = argv.index("--") if "--" in argv else len(argv)
    head = ["--dry-run" if a == "--dry-run=client" else a for a in argv[:cut]]
    return head, (argv[cut + 1 :] if cut < len(argv) else None)
