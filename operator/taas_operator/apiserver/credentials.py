"""Who TaaS is to the apiserver: the one credential loader, in kubectl's order.

    credentials = load(kubeconfig=None, context=None)   # ConfigError names the fix
    credentials.endpoint                                 # transport.Endpoint: server, TLS, auth
    credentials.source, .context, .namespace, .server    # for messages; the context's namespace
    credentials.with_token(token) -> Credentials         # same server and CA, the token only

Order: the kubeconfig given (a flag), else the first file of `$KUBECONFIG`, else
`~/.kube/config`, else the pod's service account (in a cluster); `context` picks a context
(default: the kubeconfig's current one). The default namespace is the context's (else the
service account's, else "default"). The operator, the client, the dashboard and `taas
tensorboard` all start here.

The kubeconfig itself is read by the official client's loader (`kubernetes.config`: contexts,
client certificates, tokens and their rotation, exec and auth-provider plugins), the only use of
the `kubernetes` package in TaaS; what it loads goes on as plain values (`transport.endpoint`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.config
import yaml

from taas_operator.apiserver.errors import ConfigError
from taas_operator.apiserver.transport import Endpoint, endpoint

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
_FIX = "fix: pass --kubeconfig PATH (or set KUBECONFIG) to a working kubeconfig"


@dataclass(frozen=True)
class Credentials:
    """An apiserver and an identity, with where they came from (for messages)."""

    endpoint: Endpoint
    source: str
    context: str = ""
    namespace: str = "default"

    @property
    def server(self) -> str:
        return self.endpoint.host

    def with_token(self, token: str) -> Credentials:
        """The same server and CA, authenticated by `token` alone (a dashboard viewer's own
        credentials): the client certificate, token and refresh hook of these credentials are
        dropped, so nothing of their identity is lent to the token's holder."""
        bearer = f"Bearer {token}"
        alone = dataclasses.replace(
            self.endpoint, cert_file=None, key_file=None, authorization=lambda: bearer
        )
        return Credentials(alone, "a viewer's token", "", self.namespace)


def load(kubeconfig: str | None = None, context: str | None = None) -> Credentials:
    """See the module."""
    path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    path = path or str(Path("~/.kube/config").expanduser())
    if not kubeconfig and not Path(path).exists() and SERVICE_ACCOUNT_NAMESPACE.exists():
        return _in_cluster()
    if not Path(path).exists():
        raise ConfigError(f'kubeconfig "{path}" does not exist; {_FIX}')
    try:
        return _kubeconfig(path, context)
    except ConfigError:
        raise
    except (kubernetes.config.ConfigException, yaml.YAMLError, OSError, ValueError) as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(f'cannot use kubeconfig "{path}": {detail}; {_FIX}') from None
    except Exception as err:  # the loader's own bugs on odd files (TypeError, KeyError...)
        raise ConfigError(
            f'cannot use kubeconfig "{path}": {type(err).__name__}: {err}; {_FIX}'
        ) from None


def _in_cluster() -> Credentials:
    config = kubernetes.client.Configuration()
    try:
        kubernetes.config.load_incluster_config(client_configuration=config)
    except kubernetes.config.ConfigException as err:
        raise ConfigError(f"cannot use the pod's service account: {err}; {_FIX}") from None
    namespace = SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    return Credentials(endpoint(config), "the pod's service account", "", namespace)


def _kubeconfig(path: str, context: str | None) -> Credentials:
    contexts, current = kubernetes.config.list_kube_config_contexts(config_file=path)
    chosen = context or (current or {}).get("name")
    entry: dict[str, Any] | None = next((c for c in contexts if c.get("name") == chosen), None)
    if context and entry is None:
        names = ", ".join(str(c.get("name")) for c in contexts) or "none"
        raise ConfigError(
            f'kubeconfig "{path}" has no context "{context}" (it has: {names}); fix: '
            f"--context NAME with one of those"
        )
    config = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(
        config_file=path, context=chosen, client_configuration=config
    )
    namespace = ((entry or {}).get("context") or {}).get("namespace") or "default"
    return Credentials(endpoint(config), f'kubeconfig "{path}"', str(chosen or ""), str(namespace))
