"""`taas tensorboard TARGET`: the parser, and the choice between a local job and a cluster's.

TARGET is local when it is a file (`job.yaml`, `-`), ends in .yaml/.yml/.json, or is a
directory; anything else is a TFJob name on the cluster of the kubeconfig (as `taas get`).
Exit codes: 130 (Ctrl-C) or 143 (SIGTERM) once serving, as every long-running `taas` command;
0 when a job's annotation names a TensorBoard of its own (its URL is printed); 1 TensorBoard
could not serve; 2 bad input, no such job, no TensorBoard asked for, or cluster access refused
(the message names the fix).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import NoReturn

from taas_operator.api.text import printable
from taas_operator.documents import InputError

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 1, 2, 130, 143
DEFAULT_PORT = 6006


def is_local(target: str) -> bool:
    """A job file, stdin or a directory (else: a TFJob name on a cluster)."""
    return (
        target == "-"
        or target.endswith((".yaml", ".yml", ".json"))
        or "/" in target
        or Path(target).exists()
    )


class _Terminated(Exception):
    """SIGTERM arrived while serving."""


def _raise_terminated(signum: int, frame: object) -> NoReturn:
    raise _Terminated


def _local(args: argparse.Namespace) -> int:
    from taas_operator.tensorboard_command.local import (
        has_summaries,
        local_logdirs,
        logdir_args,
        missing,
    )
    from taas_operator.tensorboard_command.process import (
        TensorBoardError,
        serve,
        tensorboard_installed,
    )

    logdirs = local_logdirs(args.target, args.namespace)
    absent = missing(logdirs)
    if absent:
        raise InputError(
            "; ".join(f"{d.what} {d.path} does not exist" for d in absent)
            + ": nothing was written there yet (run the job first: taas run JOB.yaml), or give "
            "the directory the job wrote to"
        )
    if not tensorboard_installed():
        raise InputError(
            "TensorBoard is not installed in this Python environment: pip install "
            "'taas[tensorflow]' (or pip install tensorboard)"
        )
    for d in logdirs:
        if not d.remote and not has_summaries(d.path):
            print(
                printable(
                    f"taas: no summaries in {d.path} yet ({d.what}); TensorBoard shows them as "
                    "the chief writes them (every save_summaries_steps steps)"
                ),
                file=sys.stderr,
                flush=True,
            )
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    served = None
    try:
        served = serve(logdir_args(logdirs), args.host, args.port, args.timeout)
        shown = ", ".join(d.path for d in logdirs)
        print(printable(f"TensorBoard of {shown} at {served.url} (Ctrl-C stops it)"), flush=True)
        code = served.wait()
        print(f"taas: TensorBoard exited with code {code}:\n{served.tail()}", file=sys.stderr)
        return EXIT_FAILED
    except TensorBoardError as err:
        print(f"error: {printable(str(err))}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except _Terminated:
        return EXIT_TERMINATED
    finally:
        signal.signal(signal.SIGTERM, previous)
        if served is not None:
            served.stop()


def _cluster(args: argparse.Namespace) -> int:
    from taas_operator.apiserver.errors import ApiError, ConfigError
    from taas_operator.client.jobs import TFJobClient
    from taas_operator.tensorboard_command.cluster_job import serve_cluster_job

    try:
        client = TFJobClient(args.kubeconfig, args.context, args.namespace)
        return serve_cluster_job(
            client,
            args.target,
            args.host,
            args.port,
            args.timeout,
            lambda line: print(printable(line), flush=True),
        )
    except ConfigError as err:
        print(
            f"error: {err} (or, for a job run on this machine, give its file: taas tensorboard "
            "job.yaml)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except ApiError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE


def _tensorboard(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise InputError("--timeout must be more than 0 seconds")
    if not 0 <= args.port <= 65535:
        raise InputError("--port must be 0 (any free port) to 65535")
    return _local(args) if is_local(args.target) else _cluster(args)


def add_tensorboard(subparsers: argparse._SubParsersAction) -> None:
    """`taas tensorboard`."""
    parser = subparsers.add_parser(
        "tensorboard",
        help="serve a TFJob's summaries in TensorBoard (local or on a cluster)",
        description="Serve a job's TensorBoard on this machine. For a job run with `taas run`, "
        "give its file: TensorBoard reads its chief's model_dir (found as the trainer finds "
        "it: --model_dir/--logdir flags, TAAS_MODEL_DIR/TF_LOGDIR/TF_MODEL_DIR) or a "
        "directory. For a TFJob on a cluster, give its name: the operator runs a TensorBoard "
        "for jobs annotated taas.dev/tensorboard=true, reading the chief's model_dir volume, "
        "and this serves it here through the Kubernetes API server (as kubectl port-forward "
        "would).",
        epilog="examples:\n"
        "  taas tensorboard examples/keras_digits/pss.yaml    # after taas run of that file\n"
        "  taas tensorboard /tmp/taas/keras-pss               # a directory of summaries\n"
        "  taas tensorboard mnist -n team-a                   # a cluster's TFJob\n\n"
        "exit status: 130/143 stopped by Ctrl-C/SIGTERM while serving, 1 TensorBoard could "
        "not serve, 2 bad input, no such job or no TensorBoard asked for",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "target", metavar="TARGET", help="JOB.yaml (a taas run job), a directory, or a TFJob name"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port to serve on (default {DEFAULT_PORT}, TensorBoard's; 0: any free port)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="address to serve on (default 127.0.0.1: this machine only)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="give up when TensorBoard does not serve within this long (default 300)",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        help="namespace of the TFJob (a cluster's: default the kubeconfig context's; a file's "
        "TFJobs: as taas run)",
    )
    parser.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig file (default: kubectl's)")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context to use")
    parser.set_defaults(handler=_tensorboard)
