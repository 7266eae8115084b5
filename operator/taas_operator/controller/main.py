"""`taas operator`: settings -> the Controller under kopf, until SIGINT/SIGTERM.

    run(settings, kubeconfig=None) -> int  # blocks; 0 when stopped, 2 when credentials fail
    run_from_args(args) -> int             # the `taas operator` handler; 2 on bad settings
    main(argv=None) -> int                 # `python -m taas_operator.controller`

Standalone unless the `peering` setting names a kopf peering object (leader election between
replicas through that (Cluster)KopfPeering); `/healthz` on `health_host:health_port` (127.0.0.1
unless told otherwise) unless the port is 0, `/metrics` on `health_host:metrics_port` likewise
(`controller.metrics`; a port that cannot be bound exits 2); every namespace unless
`namespaces` lists some.
Flags: `taas_operator.controller.flags`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import Any, cast

import kopf

from taas_operator.apiserver.errors import ConfigError
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller import metrics
from taas_operator.controller.controller import Controller
from taas_operator.controller.flags import UsageError, add_arguments, settings_from_args
from taas_operator.controller.handlers import build_registry, kopf_settings
from taas_operator.controller.watch.peering import own_identity
from taas_operator.settings import OperatorSettings


def run(settings: OperatorSettings, kubeconfig: str | None = None) -> int:
    """Run the operator until SIGINT/SIGTERM."""
    try:
        kube = KubeClient.load(kubeconfig, settings.concurrency, metrics.api_error)
    except ConfigError as err:
        print(f"taas operator: cannot load Kubernetes credentials: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level,
        format="%(asctime)s %(levelname)s [%(name)s] %(message)s",
        stream=sys.stderr,
        force=True,
    )
    if settings.log_level != "DEBUG":
        # kopf logs every handled watch event at INFO ("Handler ... succeeded"): too chatty.
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    kopf_config = kopf_settings(settings)
    identity = own_identity()
    controller = Controller(settings, kube, identity, kopf_config.peering.priority)
    stop_metrics = _serve_metrics(settings, controller)
    if stop_metrics is None:
        return 2
    scope = ", ".join(settings.namespaces) if settings.namespaces else "all namespaces"
    mode = (
        f"peering {settings.peering!r} (priority {kopf_config.peering.priority})"
        if settings.peering
        else "standalone"
    )
    logging.getLogger("taas_operator.controller").info(
        "TaaS operator starting: server %s, watching %s, %s", kube.endpoint.host, scope, mode
    )
    try:
        kopf.run(
            registry=build_registry(controller),
            settings=kopf_config,
            standalone=not settings.peering,
            peering_name=settings.peering or None,
            clusterwide=not settings.namespaces,
            namespaces=settings.namespaces,
            # the Controller reads the peering decision for this identity (kopf's Identity is a
            # NewType of str it does not export)
            identity=cast(Any, identity),
            liveness_endpoint=settings.health_url,
        )
    finally:
        stop_metrics()  # the API connections close in kopf's cleanup (Controller.close)
    return 0


def _serve_metrics(settings: OperatorSettings, controller: Controller) -> Callable[[], None] | None:
    """Start /metrics (a no-op stop when it is off); None, with the reason printed, when the
    address cannot be bound."""
    address = settings.metrics_address
    if address is None:
        return lambda: None
    host, port = address
    try:
        return metrics.serve(host, port, controller.jobs.values, controller.queue.depth)
    except OSError as err:
        print(
            f"taas operator: cannot serve /metrics on {host}:{port}: {err.strerror}; fix: "
            f"--metrics-port (TAAS_METRICS_PORT) a free port, or 0 to turn metrics off",
            file=sys.stderr,
        )
        return None


def run_from_args(args: argparse.Namespace) -> int:
    """The `taas operator` command body."""
    try:
        settings = settings_from_args(args)
    except UsageError as err:
        print(f"taas operator: {err}", file=sys.stderr)
        return 2
    return run(settings, args.kubeconfig)


def main(argv: list[str] | None = None) -> int:
    """`python -m taas_operator.controller [flags]`."""
    parser = add_arguments(
        argparse.ArgumentParser(
            prog="taas operator", description="Run the TaaS TFJob operator (kopf)."
        )
    )
    return run_from_args(parser.parse_args(argv))
