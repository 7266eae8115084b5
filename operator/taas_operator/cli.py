"""The `taas` command line: one argparse parser, one subcommand per verb.

    taas run JOB.yaml        run a TFJob on this machine, one process per replica
    taas validate JOB.yaml   the checks `kubectl apply` makes, offline
    taas render JOB.yaml     the pods, services and NetworkPolicy the operator would create
    taas dashboard [FLAGS]   a live web page of the cluster's TFJobs (flags: dashboard.flags)
    taas operator [FLAGS]    run the TFJob operator against a cluster (flags: controller.flags)
    taas submit | logs | get | wait | delete | scale | kubeconfig
                             TFJobs on a cluster (taas_operator.client)
    taas tensorboard JOB.yaml|DIR|JOB          a job's summaries (taas_operator.tensorboard_command)

Each subcommand is registered by an `add_<verb>(subparsers)` function that adds its parser and
sets `handler` (a function `Namespace -> int`, the exit code). To add a subcommand, write such a
function and list it in `COMMANDS`; import heavy modules (kopf, kubernetes, tensorflow) inside the
handler, never at the top of this module, so `taas run` starts fast.

Exit codes: 0 success; 1 the job failed; 2 usage or validation error (argparse's own convention,
kept for every bad file, YAML or spec); 130/143 stopped by SIGINT/SIGTERM.

Over 400 lines: the parsers of the local verbs (run, validate, render, dashboard, operator) with
their help texts, so `taas --help` and each verb's flags read in one place; no work is done here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import TYPE_CHECKING

from taas_operator.client.commands import add_cluster_commands
from taas_operator.client.sizes import add_size_argument
from taas_operator.client.submitflags import (
    add_program_arguments,
    check_manifest_flags,
    program_arguments,
    program_options,
)
from taas_operator.documents import InputError
from taas_operator.tensorboard_command.command import add_tensorboard

if TYPE_CHECKING:
    from taas_operator.api import TFJob

Handler = Callable[[argparse.Namespace], int]

EXIT_USAGE = 2


def _file_arguments(parser: argparse.ArgumentParser) -> None:
    """`FILE` or `-f FILE`, as with `kubectl apply -f`; `-` reads stdin."""
    parser.add_argument("file", nargs="?", metavar="FILE", help="TFJob YAML ('-' reads stdin)")
    parser.add_argument(
        "-f", "--filename", dest="filename", metavar="FILE", help="same as FILE, kubectl style"
    )
    parser.add_argument(
        "-n",
        "--namespace",
        default=None,
        help="namespace for TFJobs that name none (default: 'default'); a TFJob naming another "
        "namespace is an error, as with kubectl",
    )


def _path(args: argparse.Namespace) -> str:
    if args.file and args.filename:
        raise InputError("give the TFJob file once: either FILE or -f FILE, not both")
    path = args.file or args.filename
    if not path:
        raise InputError("no file given; usage: taas <command> JOB.yaml (or '-' for stdin)")
    return str(path)


# -- run -----------------------------------------------------------------------------------------
def _run(args: argparse.Namespace) -> int:
    from taas_operator.local.environment import EnvPolicy
    from taas_operator.local.runner import RunOptions, run_jobs

    jobs = _jobs(_path(args), args)
    options = RunOptions(
        logs_dir=args.logs_dir,
        color=not args.no_color,
        table=not args.quiet_table,
        host_network=args.host_network,
        allow_oversubscribe=args.allow_oversubscribe,
        env=EnvPolicy(inherit=args.inherit_env, passed=tuple(args.pass_env)),
    )
    if args.dashboard is None:
        return run_jobs(jobs, options)
    from taas_operator.dashboard.local_run import run_with_dashboard

    return run_with_dashboard(jobs, options, args.dashboard, args.dashboard_host, args.keep_serving)


def _jobs(path: str, args: argparse.Namespace) -> list[TFJob]:
    """The TFJobs of a manifest, or for PROGRAM.py (`taas run train.py --workers 2 --ps 1`) the
    TFJob `taas submit` would make, each replica running the file where it is."""
    from taas_operator.apiserver.errors import ApiError
    from taas_operator.client.programoptions import CLI_NAMES
    from taas_operator.client.programs import local_job, read_program
    from taas_operator.client.shapes import shape_warnings
    from taas_operator.documents import load_tfjobs

    try:
        if not path.endswith(".py"):
            check_manifest_flags(args, path)
            return load_tfjobs(path, args.namespace)
        program, options = read_program(path, CLI_NAMES), program_options(args)
        job = local_job(path, program, options, CLI_NAMES, args.namespace)
        for line in shape_warnings(program, options):
            print(line, file=sys.stderr)
        return [job]
    except ApiError as err:
        raise InputError(str(err)) from None


def add_run(subparsers: argparse._SubParsersAction) -> None:
    """`taas run`."""
    parser = subparsers.add_parser(
        "run",
        help="run a TFJob on this machine, one process per replica",
        description="Run every replica of a TFJob as a local process, managed exactly as the "
        "TaaS operator manages pods: same validation, same pod builder (TF_CONFIG and "
        "PS_HOSTS/WORKER_HOSTS/JOB_NAME/TASK_INDEX point at 127.0.0.1 with free ports), same "
        "restart, backoffLimit, activeDeadlineSeconds and cleanPodPolicy rules. The image is "
        "not pulled: the container's command runs in the current Python environment "
        "('python' is this interpreter), in its workingDir or the current directory. Each "
        "job's replicas share a private network namespace (their own 127.0.0.1): nothing "
        "outside the job can reach TensorFlow's unauthenticated servers. What of the pod "
        "template is not applied (resources, volumes, initContainers...) is said in one line. "
        "FILE may be a Python program instead: `taas run train.py --workers 2 --ps 1` runs "
        "the job `taas submit train.py` would make, each replica running the file where it "
        "is (the program's own arguments after `--`).",
        epilog="examples:\n"
        "  taas run examples/mnist/async.yaml\n"
        "  taas run job.yaml --logs-dir logs/        # also keep logs/<pod>.log\n"
        "  taas run train.py --workers 2 --ps 1      # your program, as taas submit runs it\n"
        "  cat job.yaml | taas run -\n\n"
        "exit status: 0 Succeeded, 1 Failed, 2 invalid input, 130 stopped (Ctrl-C), "
        "143 stopped (SIGTERM)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _file_arguments(parser)
    parser.set_defaults(program_args=None)  # what follows `--` (main: program_arguments)
    add_program_arguments(parser)
    parser.add_argument("--logs-dir", metavar="DIR", help="also write each replica's log to DIR")
    parser.add_argument("--no-color", action="store_true", help="no colours in the output")
    parser.add_argument(
        "--quiet-table", action="store_true", help="no live replica table, only the final one"
    )
    parser.add_argument(
        "--host-network",
        action="store_true",
        help="run the replicas in this machine's network instead of a private one per job "
        "(needed for a program that downloads data; TensorFlow's servers then listen on every "
        "interface of this machine)",
    )
    parser.add_argument(
        "--allow-oversubscribe",
        action="store_true",
        help="start the replicas even when they do not fit this machine's memory or CPUs "
        "(default: refuse with exit 2, saying what was measured)",
    )
    parser.add_argument(
        "--pass-env",
        action="append",
        default=[],
        metavar="NAME",
        help="also give the replicas this variable of your environment (repeatable); by "
        "default they get only their container env, what TaaS sets (TF_CONFIG...) and what "
        "running Python needs (PATH, HOME, LANG, TMPDIR, VIRTUAL_ENV, PYTHONPATH...), never "
        "e.g. KUBECONFIG or cloud credentials",
    )
    parser.add_argument(
        "--inherit-env",
        action="store_true",
        help="give the replicas your whole environment (credentials included)",
    )
    parser.add_argument(
        "--dashboard",
        nargs="?",
        type=int,
        const=0,
        default=None,
        metavar="PORT",
        help="also serve the job page (the dashboard `taas dashboard` serves for a cluster) on "
        "http://127.0.0.1:PORT/ while the job runs (no PORT: a free one; the URL is printed)",
    )
    parser.add_argument(
        "--dashboard-host",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="address the page listens on (default 127.0.0.1: this machine only)",
    )
    parser.add_argument(
        "--keep-serving",
        action="store_true",
        help="with --dashboard: keep serving the page after the run ends, until Ctrl-C",
    )
    parser.set_defaults(handler=_run)


# -- validate ------------------------------------------------------------------------------------
def _validate(args: argparse.Namespace) -> int:
    from taas_operator.client.sizes import job_sizes
    from taas_operator.documents import load_tfjobs

    jobs = load_tfjobs(_path(args), args.namespace)
    sizes = job_sizes(jobs, args.max_job_bytes)
    if not args.server:
        for job in jobs:
            print(f"tfjob.kubeflow.org/{job.name} valid ({sizes[job.name]})")
        return 0
    from taas_operator.apiserver.errors import ApiError
    from taas_operator.client.dryrun import server_checks
    from taas_operator.client.jobs import TFJobClient

    try:
        client = TFJobClient(args.kubeconfig, args.context)
        found = {job.name: server_checks(client, job) for job in jobs}
    except ApiError as err:
        raise InputError(f"--server: {err}") from None
    for job in jobs:
        if not found[job.name]:
            print(
                f"tfjob.kubeflow.org/{job.name} valid (namespace {job.namespace}; the "
                f"cluster's dry run of the TFJob and its pods agrees)"
            )
    refused = [f"TFJob {name}: {p}" for name, problems in found.items() for p in problems]
    if refused:
        raise InputError("the cluster refuses it (dry run):\n* " + "\n* ".join(refused))
    return 0


def add_validate(subparsers: argparse._SubParsersAction) -> None:
    """`taas validate`."""
    parser = subparsers.add_parser(
        "validate",
        help="check TFJobs as `kubectl apply` would, offline",
        description="Check each TFJob document with the rules the TFJob CRD enforces at "
        "`kubectl apply` (schema and CEL rules), without a cluster. Errors name the field and "
        "the fix, in kubectl's words.",
        epilog="examples:\n  taas validate job.yaml && kubectl apply -f job.yaml\n"
        "  taas validate --server job.yaml     # also the cluster's dry run of the TFJob and "
        "its pods\n\nexit status: 0 valid, 2 invalid (or unreadable)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _file_arguments(parser)
    parser.add_argument(
        "--server",
        action="store_true",
        help="also ask the cluster (a server-side dry run, nothing is stored): the TFJob and the "
        "pod each replica type would get (pod validation, Pod Security Admission, quotas)",
    )
    add_size_argument(parser)
    parser.add_argument("--kubeconfig", metavar="PATH", help="with --server: kubeconfig file")
    parser.add_argument("--context", metavar="NAME", help="with --server: kubeconfig context")
    parser.set_defaults(handler=_validate)


# -- render --------------------------------------------------------------------------------------
def _render(args: argparse.Namespace) -> int:
    from taas_operator.documents import load_tfjobs
    from taas_operator.planner.render import render_objects

    jobs = load_tfjobs(_path(args), args.namespace)
    sys.stdout.write(render_objects(jobs, args.cluster_domain, args.network_policy))
    return 0


def add_render(subparsers: argparse._SubParsersAction) -> None:
    """`taas render`."""
    parser = subparsers.add_parser(
        "render",
        help="print the pods and services the operator would create",
        description="Print, as multi-document YAML, the objects the TaaS operator would create "
        "for each TFJob: one pod and one headless service per replica, and the job's "
        "NetworkPolicy. Built by the operator's own code.",
        epilog="examples:\n"
        "  taas render job.yaml\n"
        "  taas render job.yaml --cluster-domain cluster.local | kubectl apply --dry-run=client "
        "-f -",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _file_arguments(parser)
    parser.add_argument(
        "--cluster-domain",
        default="",
        help="DNS domain appended after '.svc' in TF_CONFIG hosts (as the operator's "
        "TAAS_CLUSTER_DOMAIN), e.g. cluster.local",
    )
    parser.add_argument(
        "--network-policy",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="include the job's NetworkPolicy (the operator's default: on)",
    )
    parser.set_defaults(handler=_render)


# -- operator ------------------------------------------------------------------------------------
def _operator(args: argparse.Namespace) -> int:
    from taas_operator.controller.main import run_from_args

    return run_from_args(args)


def add_operator(subparsers: argparse._SubParsersAction) -> None:
    """`taas operator` (flags: taas_operator.controller.flags, which imports no kopf)."""
    from taas_operator.controller.flags import add_arguments

    parser = subparsers.add_parser(
        "operator",
        help="run the TFJob operator (kopf) against a cluster",
        description="Serve kubeflow.org/v1 TFJobs: create their pods, services and "
        "NetworkPolicy, keep their status. Every flag has a TAAS_* environment variable.",
    )
    add_arguments(parser)
    parser.set_defaults(handler=_operator)


# -- dashboard -----------------------------------------------------------------------------------
def _dashboard(args: argparse.Namespace) -> int:
    from taas_operator.dashboard.main import run_dashboard

    return run_dashboard(args)


def add_dashboard(subparsers: argparse._SubParsersAction) -> None:
    """`taas dashboard` (flags: taas_operator.dashboard.flags, which imports no aiohttp)."""
    from taas_operator.dashboard.flags import add_arguments

    parser = subparsers.add_parser(
        "dashboard",
        help="serve a live web page of the cluster's TFJobs (http://127.0.0.1:8765/)",
        description="Serve the TaaS dashboard: every TFJob you may read, live (state, replicas, "
        "progress and ETA), and one page per job (conditions, replicas, events, logs, loss "
        "chart, YAML), with suspend, resume, delete and submit where your RBAC allows them. "
        "It acts as the kubeconfig's user: nothing is shown or done that kubectl would refuse "
        "you. It listens on 127.0.0.1 only unless told otherwise.",
        epilog="examples:\n"
        "  taas dashboard                          # then open http://127.0.0.1:8765/\n"
        "  taas dashboard -n team-a -n team-b      # only these namespaces\n"
        "  taas dashboard --context prod --read-only\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(handler=_dashboard)


#: Subcommands, in `taas --help` order. Add a subcommand here (e.g. `add_operator`, whose
#: handler imports the controller lazily).
COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    add_run,
    add_validate,
    add_render,
    add_dashboard,
    add_operator,
    add_cluster_commands,
    add_tensorboard,
]


def build_parser() -> argparse.ArgumentParser:
    """The `taas` parser with every subcommand of `COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="taas",
        description="TaaS: distributed TensorFlow training with the kubeflow.org/v1 TFJob API.",
        epilog="examples:\n"
        "  taas run examples/mnist/async.yaml     # a TFJob on this machine, no cluster\n"
        "  taas validate job.yaml                 # kubectl apply's checks, offline\n"
        "  taas render job.yaml                   # the pods/services the operator creates\n"
        "  taas submit job.yaml                   # on a cluster: create, follow to the end\n"
        "  taas get                               # STATE, PROGRESS, ETA of the TFJobs there\n\n"
        "Run 'taas <command> --help' for a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"taas {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in COMMANDS:
        add(subparsers)
    return parser


def _version() -> str:
    try:
        return metadata.version("taas")
    except metadata.PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `taas` console script; returns the exit code."""
    argv, tail = program_arguments(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(argv)
    if tail is not None:
        args.program_args = tail
    handler: Handler = args.handler
    try:
        return handler(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
