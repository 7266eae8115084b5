"""`taas kubeconfig SERVICEACCOUNT -n NS`: a kubeconfig for a team member, from a token.

    made = team_kubeconfig(connection, "alice", "team-a", seconds=28800)   # YAML text

What `kubectl create token` and three `kubectl config set-*` commands make together: a bound
token of the ServiceAccount (TokenRequest, expiring after `seconds`; the apiserver may cap it),
the cluster's server and CA as the caller's own kubeconfig has them, and a context whose
namespace is the ServiceAccount's. The member then has exactly what that ServiceAccount's
RoleBindings grant (the `edit` or `view` role in their namespace, docs/operations.md). The
token is written only where asked (`-o FILE`, mode 0600) or to standard output.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import yaml

from taas_operator.apiserver.blocking import Connection
from taas_operator.apiserver.errors import Invalid, Request

#: kubectl create token's bounds: at least 10 minutes; TaaS's at most one year.
MIN_SECONDS, MAX_SECONDS = 600, 365 * 24 * 3600
_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(text: str) -> int:
    """`8h`, `30m`, `7d` -> seconds; Invalid naming `--duration` and the fix."""
    match = _DURATION.match(text.strip())
    seconds = int(match.group(1)) * _UNIT[match.group(2)] if match else 0
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise Invalid(
            f"--duration {text!r}: must be a number and a unit (s, m, h, d) between 10m and "
            f"365d; fix: e.g. --duration 8h"
        )
    return seconds


def team_kubeconfig(connection: Connection, account: str, namespace: str, seconds: int) -> str:
    """The kubeconfig (YAML) of a new token of `account` in `namespace`."""
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    made = connection.call(
        Request("create", "serviceaccounts/token", namespace, account), "POST", path, body=request
    )
    token = str(((made or {}).get("status") or {}).get("token", ""))
    endpoint = connection.credentials.endpoint
    cluster: dict[str, object] = {"server": endpoint.host}
    ca = endpoint.ca_data.encode() if endpoint.ca_data else None
    if ca is None and endpoint.ca_file:
        ca = Path(endpoint.ca_file).read_bytes()
    if ca is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    if not endpoint.verify:
        cluster["insecure-skip-tls-verify"] = True
    name = f"{account}@{namespace}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [
            {
                "name": name,
                "context": {"cluster": "cluster", "user": name, "namespace": namespace},
            }
        ],
        "current-context": name,
    }
    return yaml.safe_dump(config, sort_keys=False)
