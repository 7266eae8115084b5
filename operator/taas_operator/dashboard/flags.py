"""`taas dashboard`'s flags, kubectl's where kubectl has them; imports nothing heavy (the CLI
builds every parser at start-up, so `taas run` stays fast).

    add_arguments(parser)
"""

from __future__ import annotations

import argparse

DEFAULT_PORT = 8765


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """-n/--namespace (repeatable), --kubeconfig, --context, --host, --port, --read-only."""
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
        help="address to listen on (default 127.0.0.1: this machine only; the page acts with "
        "your credentials, so never expose it to others without --read-only)",
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
