"""`taas submit | logs | get | wait | delete | scale | kubeconfig`: TFJobs on a cluster, from the
command line.

    taas submit JOB.yaml [--detach]      create, then the live table and merged logs until it
                                         ends; exit 0 Succeeded, 1 Failed (as `taas run`)
    taas submit PROGRAM.py --workers 2 --ps 1 [--chief] [--gpus-per-worker N] [--image I]
        [--cpu Q] [--memory Q] [--env K=V]... [--name N] [--dry-run] [-- ARGS]
                                         the same for a TFJob running your program, shipped
                                         in a ConfigMap (client.programs); --dry-run prints
                                         both manifests, nothing is sent
    taas logs JOB [-f] [--replica R]     the replicas' logs ([worker-1] prefixes), -f follows
    taas get [JOB] [-A] [-o yaml|json]   NAME STATE WORKERS PS PROGRESS ETA AGE (one JOB: why
                                         it is not running, where its TensorBoard is)
    taas wait JOB [--for C] [--timeout S]  until Succeeded (or C); 1 when it fails or times out
    taas delete JOB
    taas scale JOB --workers N           the Worker replicas, through the scale subresource
    taas kubeconfig SA [-o FILE]         a team member's kubeconfig: a new token of SA

Every command takes `-n/--namespace`, `--kubeconfig` and `--context` as kubectl does. A missing
job, a missing CRD, RBAC refusing the user, a broken kubeconfig or an unreachable server print
one `error:` line naming the fix and exit 2; never a traceback. Ctrl-C leaves the job running
(exit 130; `taas delete` stops it).

This module imports no kubernetes code at import time (`taas run` must start fast): each
handler imports the client when it runs.

Over 400 lines: seven verbs, each handler beside its parser, whose help and examples are most of
the text; the work itself is in the modules they call (jobs, programs, kubeconfigs, scale).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import yaml

from taas_operator.api.text import printable
from taas_operator.apiserver.errors import ApiError
from taas_operator.client.errors import JobFailed, WaitTimeout
from taas_operator.client.programoptions import CLI_NAMES
from taas_operator.client.programs import PROGRAM_DIR
from taas_operator.client.submitflags import (
    add_program_arguments,
    check_manifest_flags,
    is_program,
    program_options,
)
from taas_operator.terminal import Display

if TYPE_CHECKING:
    from taas_operator.client.jobs import TFJobClient

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


def _connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-n", "--namespace", help="namespace (default: the kubeconfig context's, else default)"
    )
    parser.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig file (default: kubectl's)")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context to use")


def _client(args: argparse.Namespace) -> TFJobClient:
    from taas_operator.client.jobs import TFJobClient

    return TFJobClient(args.kubeconfig, args.context, args.namespace)


def _safely(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Exit 2 with the message for an ApiError; 130 on Ctrl-C (the job keeps running)."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except ApiError as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            job = getattr(args, "job", None) or "the TFJob"
            print(
                f"\ntaas: interrupted; {job} goes on running in the cluster "
                f"(taas delete {job} stops it)",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED

    return run


def _display(stream: Any = None) -> Display:
    out = stream or sys.stdout
    return Display(out, color=out.isatty(), live=out.isatty())


# -- submit --------------------------------------------------------------------------------------
def _submit(args: argparse.Namespace) -> int:
    if is_program(args.file):
        return _submit_program(args)
    check_manifest_flags(args, args.file)
    if args.dry_run:
        from taas_operator.client.manifests import job_manifest

        manifest = job_manifest(args.file, args.namespace, "")
        if not manifest["metadata"]["namespace"]:
            del manifest["metadata"]["namespace"]
        sys.stdout.write(yaml.safe_dump(manifest, sort_keys=False))
        return 0
    client = _client(args)
    return _follow(client, client.create(args.file), args)


def _submit_program(args: argparse.Namespace) -> int:
    from taas_operator.client.programs import dump_yaml, program_job, read_program
    from taas_operator.client.shapes import shape_warnings

    options = program_options(args)
    program = read_program(args.file, CLI_NAMES)
    made = program_job(program, options, CLI_NAMES, args.namespace)  # all checked, none asked
    for line in shape_warnings(program, options):
        print(line, file=sys.stderr)
    if args.dry_run:
        sys.stdout.write(dump_yaml(made))
        print(
            "note: taas submit makes the ConfigMap owned by the TFJob (an ownerReference to its "
            "uid, known once it is created): applied with kubectl, delete the ConfigMap with "
            "the job",
            file=sys.stderr,
        )
        return 0
    client = _client(args)  # no namespace in `made`: the client's (the context's) is used
    job = client.create_program(made, CLI_NAMES)
    return _follow(client, job, args, made.config_map["metadata"]["name"])


def _follow(
    client: TFJobClient, job: Any, args: argparse.Namespace, config_map: str | None = None
) -> int:
    from taas_operator.client.console import follow_job

    args.job = job.name
    print(f"tfjob.kubeflow.org/{job.name} created (namespace {job.namespace})", flush=True)
    if config_map:
        print(f"configmap/{config_map} created (the program, owned by the TFJob)", flush=True)
    if args.detach:
        return 0
    display = _display()
    try:
        final = follow_job(client, job, display)
    finally:
        display.close()
    return _verdict(final)


def _verdict(job: Any) -> int:
    if job.status.is_true("Succeeded"):
        print(f"TFJob {job.name} Succeeded", flush=True)
        return 0
    failed = job.status.condition("Failed")
    print(f"TFJob {job.name} Failed: {printable(failed.message if failed else '')}", flush=True)
    return EXIT_FAILED


# -- logs ----------------------------------------------------------------------------------------
def _logs(args: argparse.Namespace) -> int:
    client = _client(args)
    display = _display()
    try:
        for line in client.logs(args.job, replica=args.replica, follow=args.follow):
            if args.replica:
                print(line.text, flush=True)
            else:
                display.line(args.job, line.pod, line.text.encode())
    finally:
        display.close()
    return 0


# -- get -----------------------------------------------------------------------------------------
def _get(args: argparse.Namespace) -> int:
    from taas_operator.client.console import jobs_table, not_running, now_utc, replica_lines

    client = _client(args)
    one = [client.get(args.job)] if args.job else None
    jobs = one or client.list(all_namespaces=args.all_namespaces)
    if args.output in ("yaml", "json"):
        objects = [job.to_dict() for job in jobs]
        listed = {"apiVersion": "v1", "kind": "List", "items": objects}
        body: Any = objects[0] if one else listed
        text = json.dumps(body, indent=2) + "\n" if args.output == "json" else yaml.safe_dump(body)
        sys.stdout.write(text)
        return 0
    if not jobs:
        where = "any namespace" if args.all_namespaces else f"namespace {client.namespace}"
        print(f"No TFJobs found in {where}.", file=sys.stderr)
        return 0
    print("\n".join(jobs_table(jobs, now_utc(), args.all_namespaces)))
    problem = not_running(jobs[0]) if one else None
    if problem:
        print(printable(f"{problem[0]}: {problem[1]}"))
    replicas = replica_lines(jobs[0], client.pods(jobs[0].name)) if one else []
    if replicas:  # one job: its replicas too, as `taas run` shows them
        print()
        print("\n".join(printable(line) for line in replicas))
    board = _tensorboard_line(jobs[0]) if one else None
    if board:
        print(printable(board))
    return 0


def _tensorboard_line(job: Any) -> str | None:
    """Where the job's TensorBoard is: the command for the operator's, or the job's link."""
    from taas_operator.api.constants import TENSORBOARD_ANNOTATION
    from taas_operator.tensorboard.objects import (
        tensorboard_command,
        tensorboard_link,
        tensorboard_request,
    )

    request = tensorboard_request(job)
    if request == "run":
        return f"TensorBoard: {tensorboard_command(job.namespace, job.name)}"
    if request == "link":
        return f"TensorBoard: {tensorboard_link(job.metadata.annotations[TENSORBOARD_ANNOTATION])}"
    return None


# -- wait ----------------------------------------------------------------------------------------
def _wait(args: argparse.Namespace) -> int:
    from taas_operator.api.state import job_state
    from taas_operator.planner import progress_columns

    client = _client(args)
    shown: list[tuple[str, str, str]] = []

    def say(job: Any) -> None:
        state = (job_state(job.status).label, *progress_columns(job.status))
        if not shown or shown[-1] != state:
            shown.append(state)
            print(printable(f"TFJob {job.name}: {state[0]} {state[1]} ETA {state[2]}"), flush=True)

    try:
        conditions = tuple(args.conditions or ["Succeeded"])
        client.wait(args.job, conditions=conditions, timeout=args.timeout, callback=say)
    except (JobFailed, WaitTimeout) as err:
        print(f"taas: {printable(str(err))}", file=sys.stderr)
        return EXIT_FAILED
    return 0


# -- delete --------------------------------------------------------------------------------------
def _delete(args: argparse.Namespace) -> int:
    client = _client(args)
    client.delete(args.job)
    print(f'tfjob.kubeflow.org "{args.job}" deleted')
    return 0


# -- scale ---------------------------------------------------------------------------------------
def _scale(args: argparse.Namespace) -> int:
    from taas_operator.client.scale import checked_workers

    checked_workers(args.workers)  # before any connection: a bad N is said first
    workers = _client(args).scale_job(args.job, args.workers)
    print(f'tfjob.kubeflow.org "{args.job}" scaled to {workers} Worker replicas')
    return 0


def _add_scale(subparsers: argparse._SubParsersAction) -> None:
    scale = subparsers.add_parser(
        "scale",
        help="set a TFJob's Worker replicas (as `kubectl scale tfjob/JOB --replicas=N`)",
        description="Set spec.tfReplicaSpecs.Worker.replicas through the TFJob's scale "
        "subresource. The operator makes the workers of the new indices, or deletes those "
        "past N, and touches no other pod; what the program does then: docs/tfjob-api.md.",
        epilog="example:\n  taas scale mnist --workers 4\n\nexit status: 0 scaled, 2 bad "
        "input (N below 0 or above the replica bound, no Worker type) or cluster access",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scale.add_argument("job", metavar="JOB")
    scale.add_argument(
        "--workers", type=int, required=True, metavar="N", help="the Worker replicas wanted"
    )
    _connection_arguments(scale)
    scale.set_defaults(handler=_safely(_scale))


# -- kubeconfig ----------------------------------------------------------------------------------
def _kubeconfig(args: argparse.Namespace) -> int:
    import os

    from taas_operator.apiserver.blocking import Connection
    from taas_operator.apiserver.errors import Invalid
    from taas_operator.client.kubeconfigs import duration_seconds, team_kubeconfig

    seconds = duration_seconds(args.duration)  # before any connection: a bad value first
    connection = Connection.load(args.kubeconfig, args.context)
    namespace = args.namespace or connection.namespace
    text = team_kubeconfig(connection, args.account, namespace, seconds)
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return 0
    try:
        descriptor = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(text)
    except OSError as err:
        raise Invalid(
            f"-o {args.output}: cannot write it ({err.strerror or err}); fix: a path in an "
            f"existing directory you may write"
        ) from None
    print(f"wrote {args.output} (ServiceAccount {namespace}/{args.account}, for {args.duration})")
    return 0


def _add_kubeconfig(subparsers: argparse._SubParsersAction) -> None:
    made = subparsers.add_parser(
        "kubeconfig",
        help="a kubeconfig for a team member: a new token of a ServiceAccount, this cluster",
        description="Print (or write with -o, mode 0600) a kubeconfig acting as SERVICEACCOUNT "
        "of the namespace: a new bound token (as `kubectl create token`, expiring after "
        "--duration), the server and CA of your own kubeconfig, a context in that namespace. "
        "The member gets what the ServiceAccount's RoleBindings grant: docs/operations.md.",
        epilog="example:\n  kubectl create serviceaccount alice -n team-a\n  kubectl create "
        "rolebinding alice-edit --clusterrole=edit --serviceaccount=team-a:alice -n team-a\n"
        "  taas kubeconfig alice -n team-a --duration 8h -o alice.kubeconfig\n\nexit status: "
        "0 made, 2 bad input (a duration, no such ServiceAccount, RBAC) or cluster access",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    made.add_argument("account", metavar="SERVICEACCOUNT")
    made.add_argument(
        "--duration", default="8h", help="how long the token lasts (10m to 365d; default 8h)"
    )
    made.add_argument("-o", "--output", metavar="FILE", help="write here (0600), not stdout")
    _connection_arguments(made)
    made.set_defaults(handler=_safely(_kubeconfig))


def add_cluster_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register submit, logs, get, wait, delete, scale and kubeconfig."""
    raw = argparse.RawDescriptionHelpFormatter
    submit = subparsers.add_parser(
        "submit",
        usage="taas submit [options] JOB.yaml|PROGRAM.py [-- ARGS...]",
        help="create a TFJob (from YAML, or running your .py program) and follow it to its end",
        description="Create the TFJob in JOB.yaml (checked first as `taas validate` checks it), "
        "or one whose replicas run your Python program PROGRAM.py, then show its replicas, "
        "PROGRESS and ETA and every replica's log lines until it Succeeded or Failed. What "
        "follows `--` are the program's arguments.\n\n"
        f"A program is shipped in a ConfigMap <job>-program (at most 1 MiB; larger: build an "
        f"image, docs/deploy.md) owned by the TFJob, mounted read-only at {PROGRAM_DIR}/ in "
        f"every replica and run as `python {PROGRAM_DIR}/PROGRAM.py ARGS`, in the trainer "
        "image by default; TF_CONFIG is set as for any TFJob. docs/your-code.md has more.",
        epilog="examples:\n"
        "  taas submit examples/mnist/async.yaml\n"
        "  taas submit train.py --workers 2 --ps 1\n"
        "  taas submit train.py --chief --workers 4 --gpus-per-worker 1 --memory 8Gi "
        "-- --epochs 3\n"
        "  taas submit train.py --workers 2 --dry-run > job.yaml   # both manifests\n\n"
        "exit status: 0 Succeeded, 1 Failed, 2 bad input or cluster access, 130 "
        "interrupted (the job keeps running)",
        formatter_class=raw,
    )
    submit.set_defaults(program_args=None)  # what follows `--` (cli.main: program_arguments)
    submit.add_argument(
        "file",
        metavar="JOB.yaml|PROGRAM.py",
        help="one TFJob (.yaml, .yml, .json; '-' reads stdin) or a Python program (.py)",
    )
    submit.add_argument("--detach", action="store_true", help="return once it is created")
    submit.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be created as YAML (kubectl's --dry-run=client -o yaml; "
        "--dry-run=client is taken too), send nothing",
    )
    add_program_arguments(submit)
    _connection_arguments(submit)
    submit.set_defaults(handler=_safely(_submit))

    logs = subparsers.add_parser(
        "logs",
        help="a TFJob's replica logs",
        description="Print the logs of every replica of a TFJob ([worker-1] prefixes), or of one.",
        epilog="examples:\n  taas logs mnist -f\n  taas logs mnist --replica worker-1",
        formatter_class=raw,
    )
    logs.add_argument("job", metavar="JOB")
    logs.add_argument(
        "-f", "--follow", action="store_true", help="follow until the job ends (waits for pods)"
    )
    logs.add_argument("--replica", metavar="R", help="one replica only, e.g. worker-1 or ps-0")
    _connection_arguments(logs)
    logs.set_defaults(handler=_safely(_logs))

    get = subparsers.add_parser(
        "get",
        help="list TFJobs (or one) with STATE, PROGRESS and ETA",
        description="The columns of `kubectl get tfjobs`: NAME STATE WORKERS PS PROGRESS ETA AGE.",
    )
    get.add_argument("job", metavar="JOB", nargs="?")
    get.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    get.add_argument("-o", "--output", choices=["table", "yaml", "json"], default="table")
    _connection_arguments(get)
    get.set_defaults(handler=_safely(_get))

    wait = subparsers.add_parser(
        "wait",
        help="wait until a TFJob Succeeded",
        description="Print the job's state and progress as they change until it Succeeded (or "
        "a --for condition is true).",
        epilog="exit status: 0 the condition is true, 1 the job Failed (its message is printed) "
        "or the timeout passed, 2 bad input or cluster access",
        formatter_class=raw,
    )
    wait.add_argument("job", metavar="JOB")
    wait.add_argument(
        "--for",
        dest="conditions",
        action="append",
        metavar="CONDITION",
        choices=["Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"],
        help="condition to wait for (repeatable; default Succeeded)",
    )
    wait.add_argument("--timeout", type=float, metavar="SECONDS", help="give up after this long")
    _connection_arguments(wait)
    wait.set_defaults(handler=_safely(_wait), conditions=None)

    delete = subparsers.add_parser("delete", help="delete a TFJob (its pods and services go too)")
    delete.add_argument("job", metavar="JOB")
    _connection_arguments(delete)
    delete.set_defaults(handler=_safely(_delete))
    _add_scale(subparsers)
    _add_kubeconfig(subparsers)
