"""`taas dashboard`: load the kubeconfig, serve the page until Ctrl-C.

    run_dashboard(args) -> exit code        # 0 after Ctrl-C/SIGTERM; 2 on bad input

A kubeconfig that cannot be used, or a port that cannot be had, is one line naming the flag and
the fix (exit 2), before anything is served.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from taas_operator.dashboard.cluster_source import ClusterSource
from taas_operator.dashboard.serve import serve
from taas_operator.dashboard.server import ServerSettings


def run_dashboard(args: argparse.Namespace) -> int:
    """Serve the cluster's dashboard until stopped."""
    source = ClusterSource.load(args.kubeconfig, args.context, args.namespace)
    api = source.api
    settings = ServerSettings(host=args.host, port=args.port, read_only=args.read_only)

    def ready(url: str) -> None:
        print(
            f"taas dashboard: {url}  ({api.server}, acting as {api.user or 'you'}"
            f"{', read-only' if args.read_only else ''}; Ctrl-C stops it)",
            flush=True,
        )

    async def main() -> None:
        task = asyncio.create_task(serve(source, settings, ready))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())
    print("taas dashboard: stopped", file=sys.stderr)
    return 0
