"""`taas operator`: settings -> the Controller under kopf, until SIGINT/SIGTERM.

    run(settings, kubeconfig=None) -> int  # blocks; 0 when stopped, 2 when credentials fail
    run_from_args(args) -> int             # the `taas operator` handler; 2 on bad settings
    main(argv=None) -> int                 # `python -m taas_operator.controller`

Standalone unless the `peering` setting names a kopf peering object (leader election between
replicas through that (Cluster)KopfPeering); `/healthz` on `health_port` unless it is 0; every
namespace unless `namespaces` lists some. Flags: `taas_operator.controller.flags`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any, cast

import kopf

from taas_operator.controller.flags import UsageError, add_arguments, settings_from_args
from taas_operator.controller.handlers import build_registry, kopf_settings
from taas_operator.controller.kube import KubeClient
from taas_operator.controller.peering import own_identity
from taas_operator.controller.triggers import Controller
from taas_operator.settings import OperatorSettings


def run(settings: OperatorSettings, kubeconfig: str | None = None) -> int:
    """Run the operator until SIGINT/SIGTERM."""
    try:
        kube = KubeClient.load(kubeconfig, settings.concurrency)
    except Exception as err:  # the loaders raise ConfigException, OSError, yaml errors, ...
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
    scope = ", ".join(settings.namespaces) if settings.namespaces else "all namespaces"
    mode = (
        f"peering {settings.peering!r} (priority {kopf_config.peering.priority})"
        if settings.peering
        else "standalone"
    )
    logging.getLogger("taas_operator.controller").info(
        "TaaS operator starting: server %s, watching %s, %s", kube.config.host, scope, mode
    )
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
        liveness_endpoint=(
            f"http://0.0.0.0:{settings.health_port}/healthz" if settings.health_port else None
        ),
    )
    return 0


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
