"""`taas dashboard`: load the kubeconfig, serve the page until Ctrl-C.

    run_dashboard(args) -> exit code        # 0 after Ctrl-C/SIGTERM; 2 on bad input
    viewer_sources(base, namespaces)        # --auth kubernetes: a viewer's token -> a Source

A kubeconfig that cannot be used, or a port that cannot be had, is one line naming the flag and
the fix (exit 2), before anything is served. Who may use the page: `dashboard.access`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable

from taas_operator.apiserver.blocking import Connection
from taas_operator.apiserver.kubeapi import KubeApi
from taas_operator.dashboard.access import Gate, TokenGate, ViewerGate
from taas_operator.dashboard.cluster import ClusterSource
from taas_operator.dashboard.cluster.scopes import NamespaceNames
from taas_operator.dashboard.cluster.source import connect
from taas_operator.dashboard.serve import serve
from taas_operator.dashboard.server import ServerSettings
from taas_operator.dashboard.source import Source

ViewerSource = Callable[[str], Awaitable[tuple[int, str, str, Source | None]]]


def viewer_sources(base: Connection, namespaces: list[str]) -> ViewerSource:
    """`--auth kubernetes`: a viewer's token -> (SelfSubjectReview status, user, uid, source
    acting with the token), every source sharing the dashboard's own list of namespace names."""
    shared: list[NamespaceNames] = []  # made in the server's event loop, on the first sign-in

    async def viewer_source(token: str) -> tuple[int, str, str, Source | None]:
        if not shared:
            shared.append(NamespaceNames(KubeApi.of(base)))
        return await ClusterSource.for_token(base, token, namespaces, shared[0])

    return viewer_source


def run_dashboard(args: argparse.Namespace) -> int:
    """Serve the cluster's dashboard until stopped."""
    settings = ServerSettings(
        host=args.host, port=args.port, read_only=args.read_only, allowed_hosts=args.allow_host
    )
    gate: Gate
    if args.auth == "kubernetes":
        base = connect(args.kubeconfig, args.context)
        gate = ViewerGate(viewer_sources(base, list(args.namespace)))
        who = "each viewer, with their own Kubernetes token"
        server = base.server
    else:
        source = ClusterSource.load(args.kubeconfig, args.context, args.namespace)
        gate = TokenGate(source)
        server = source.api.server
        who = "you"

    def ready(url: str) -> None:
        print(
            f"taas dashboard: {url}  ({server}, acting as {who}"
            f"{', read-only' if args.read_only else ''}; Ctrl-C stops it)",
            flush=True,
        )

    async def main() -> None:
        task = asyncio.create_task(serve(gate, settings, ready))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())
    print("taas dashboard: stopped", file=sys.stderr)
    return 0
