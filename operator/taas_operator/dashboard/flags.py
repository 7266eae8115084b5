"""`taas dashboard`'s flags, kubectl's where kubectl has them; imports nothing heavy (the CLI
builds every parser at start-up, so `taas run` stays fast).

    add_arguments(parser)
"""

from __future__ import annotations

import argparse

DEFAULT_PORT = 8765


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """-n/--namespace (repeatable), --kubeconfig, --context, --host, --port, --read-only,
    --auth, --allow-host (repeatable)."""
    parser.add_argument(
        "-n",
        "--namespace",
        action="append",
        default=[],
        metavar="NAMESPACE",
        help="show TFJobs of this namespace (repeat for several); default: every namespace you "
        "may list TFJobs in, else your context's namespace",
    )
    parser.add_argument(
        "--kubeconfig",
        default=None,
        metavar="FILE",
        help="kubeconfig to use, as kubectl (default: $KUBECONFIG, then ~/.kube/config; in a "
        "pod: its service account)",
    )
    parser.add_argument(
        "--context", default=None, help="kubeconfig context to use, as kubectl (default: current)"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="address to listen on (default 127.0.0.1: this machine only). Whatever the "
        "address, every request needs the token in the printed URL (--auth token) or the "
        "viewer's own Kubernetes token (--auth kubernetes)",
    )
    parser.add_argument(
        "--auth",
        choices=["token", "kubernetes"],
        default="token",
        help="token (default): a random token per run, printed in the URL; the page acts with "
        "your kubeconfig's identity. kubernetes: each viewer signs in with their own "
        "Kubernetes bearer token (or an auth proxy passes it) and the page acts as them",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name the page may be opened by besides localhost/127.0.0.1 and --host "
        "(repeat; e.g. an Ingress's name). Other names are refused (DNS rebinding)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="offer no actions (suspend, resume, delete, submit), whatever RBAC allows",
    )
