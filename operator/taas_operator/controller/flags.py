"""The `taas operator` flags and how they become OperatorSettings (light: no kopf import).

    add_arguments(parser) -> parser        # the flags, for `taas operator` and `python -m`
    settings_from_args(args) -> OperatorSettings     # raises UsageError naming flag and env var
    UsageError(ValueError)

Flags override the environment (`TAAS_NAMESPACES='["a","b"]'`, `TAAS_CLUSTER_DOMAIN=...`), which
overrides the defaults in `taas_operator.settings`. `--kubeconfig` is not a setting: it only
says where the credentials are.
"""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from taas_operator.settings import OperatorSettings

_FLAGS = {
    "namespaces": "--namespace / --all-namespaces",
    "cluster_domain": "--cluster-domain",
    "concurrency": "--concurrency",
    "log_level": "--log-level",
    "peering": "--peering",
    "health_port": "--health-port",
    "network_policy": "--no-network-policy",
    "network_policy_extra_namespaces": "--network-policy-namespace",
}


class UsageError(ValueError):
    """A flag or TAAS_* variable has a bad value; the message names both and the fix."""


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the operator's flags to `parser` (defaults come from env / OperatorSettings)."""
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--namespace",
        "-n",
        dest="namespaces",
        action="append",
        metavar="NS",
        help="watch this namespace (repeatable); default: TAAS_NAMESPACES, else all namespaces",
    )
    scope.add_argument(
        "--all-namespaces", "-A", action="store_true", help="watch every namespace (cluster-wide)"
    )
    parser.add_argument(
        "--cluster-domain",
        metavar="D",
        help="DNS domain after `.svc` in TF_CONFIG hosts, e.g. cluster.local (default: none)",
    )
    parser.add_argument(
        "--concurrency", type=int, metavar="N", help="API calls in flight at once (default 16)"
    )
    parser.add_argument(
        "--log-level", metavar="L", help="DEBUG, INFO, WARNING or ERROR (default INFO)"
    )
    parser.add_argument(
        "--peering",
        metavar="NAME",
        help="kopf peering object for leader election between replicas (default: standalone)",
    )
    parser.add_argument(
        "--health-port", type=int, metavar="P", help="port of /healthz; 0 turns it off (8080)"
    )
    parser.add_argument(
        "--no-network-policy",
        dest="network_policy",
        action="store_false",
        default=None,
        help="do not create a NetworkPolicy per TFJob",
    )
    parser.add_argument(
        "--network-policy-namespace",
        dest="network_policy_extra_namespaces",
        action="append",
        metavar="NS",
        help="namespace also admitted to every job's TensorFlow ports (repeatable)",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: in-cluster service account, else $KUBECONFIG)",
    )
    return parser


def settings_from_args(args: argparse.Namespace) -> OperatorSettings:
    """OperatorSettings from the flags given, the TAAS_* environment and the defaults."""
    overrides: dict[str, Any] = {}
    for name in OperatorSettings.model_fields:
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    if getattr(args, "all_namespaces", False):
        overrides["namespaces"] = []
    if isinstance(overrides.get("log_level"), str):
        overrides["log_level"] = overrides["log_level"].upper()
    try:
        return OperatorSettings(**overrides)
    except ValidationError as err:
        problems = []
        for error in err.errors():
            field = str(error["loc"][0]) if error["loc"] else "?"
            where = f"{_FLAGS.get(field, '--' + field)} or TAAS_{field.upper()}"
            problems.append(f"{field} ({where}): {error['msg']} (got {error.get('input')!r})")
        raise UsageError("invalid operator setting: " + "; ".join(problems)) from None
    except SettingsError as err:
        raise UsageError(
            f"invalid TAAS_* environment variable: {err}; list settings such as "
            f'TAAS_NAMESPACES take JSON, e.g. \'["team-a","team-b"]\''
        ) from None
