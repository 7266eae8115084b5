"""The client's one module that uses the official `kubernetes` package: credentials found as
kubectl finds them, every call's errors translated, watches that survive expiry, log streams.

    conn = Connection(kubeconfig=None, context=None)   # ConfigError when unusable
    conn.with_token(token) -> Connection               # same cluster, a bearer token's identity
    conn.namespace, conn.server, conn.context          # the context's namespace ("default")
    conn.custom / conn.core                            # CustomObjectsApi, CoreV1Api
    conn.call(what, fn, *args, **kwargs)               # fn(...), errors -> ClientError
    conn.transport() -> apiserver.transport.Transport   # for the one list-then-watch loop
    conn.refusal(status, body, what) -> ClientError     # an error answer read by the transport
    conn.log_stream(namespace, pod, container, follow) -> LogStream (iterate lines; .close())

Credentials: `--kubeconfig`, else $KUBECONFIG, else ~/.kube/config, else the pod's service
account (in a cluster), like kubectl; `--context` picks a context. The default namespace is the
context's (else the service account's, else "default").
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.config
import urllib3
import yaml
from kubernetes.client.rest import ApiException

from taas_operator.apiserver.transport import Transport, endpoint
from taas_operator.client.errors import (
    AlreadyExists,
    ApiFailure,
    ClientError,
    ConfigError,
    CrdMissing,
    Forbidden,
    Invalid,
    JobNotFound,
    Unreachable,
)

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
CRD_FIX = (
    "install the TFJob CRD: kubectl apply --server-side -f "
    "manifests/crd/tfjobs.kubeflow.org.yaml (from a TaaS checkout), or helm install taas "
    "charts/taas"
)


@dataclass(frozen=True)
class What:
    """One request, for messages: verb as RBAC names it, resource, namespace, object name."""

    verb: str
    resource: str
    namespace: str = ""
    name: str = ""

    def where(self) -> str:
        return f' in namespace "{self.namespace}"' if self.namespace else ""


def _server_message(err: ApiException) -> tuple[str, dict[str, Any]]:
    try:
        body = yaml.safe_load(err.body or "") or {}
    except yaml.YAMLError:
        body = {}
    if not isinstance(body, dict):
        return str(err.body or err.reason), {}
    return str(body.get("message") or err.reason or ""), dict(body.get("details") or {})


class Connection:
    """An API client for one kubeconfig context (or the in-cluster service account)."""

    def __init__(self, kubeconfig: str | None = None, context: str | None = None) -> None:
        self.configuration = kubernetes.client.Configuration()
        self.source, self.context, self.namespace = self._load(kubeconfig, context)
        self._clients()

    def _clients(self) -> None:
        self.server = str(self.configuration.host)
        self.api = kubernetes.client.ApiClient(self.configuration)
        self.custom = kubernetes.client.CustomObjectsApi(self.api)
        self.core = kubernetes.client.CoreV1Api(self.api)

    def with_token(self, token: str) -> Connection:
        """The same server and CA, authenticated by `token` alone (a dashboard viewer's own
        credentials): this connection's client certificate, token and refresh hook are dropped,
        so nothing of its identity is lent to the token's holder."""
        other = Connection.__new__(Connection)
        config = copy.deepcopy(self.configuration)
        config.api_key = {"authorization": token}
        config.api_key_prefix = {"authorization": "Bearer"}
        config.refresh_api_key_hook = None
        config.cert_file = config.key_file = None
        config.username = config.password = ""
        other.configuration = config
        other.source, other.context, other.namespace = "a viewer's token", "", self.namespace
        other._clients()
        return other

    def _load(self, kubeconfig: str | None, context: str | None) -> tuple[str, str, str]:
        """(where the credentials came from, context name, default namespace)."""
        fix = "fix: pass --kubeconfig PATH (or set KUBECONFIG) to a working kubeconfig"
        path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
        path = path or str(Path("~/.kube/config").expanduser())
        if not kubeconfig and not Path(path).exists() and SERVICE_ACCOUNT_NAMESPACE.exists():
            try:
                kubernetes.config.load_incluster_config(client_configuration=self.configuration)
            except kubernetes.config.ConfigException as err:
                raise ConfigError(f"cannot use the pod's service account: {err}; {fix}") from None
            namespace = SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
            return "the pod's service account", "", namespace
        if not Path(path).exists():
            raise ConfigError(f'kubeconfig "{path}" does not exist; {fix}')
        try:
            contexts, current = kubernetes.config.list_kube_config_contexts(config_file=path)
            chosen = context or (current or {}).get("name")
            entry = next((c for c in contexts if c.get("name") == chosen), None)
            if context and entry is None:
                names = ", ".join(str(c.get("name")) for c in contexts) or "none"
                raise ConfigError(
                    f'kubeconfig "{path}" has no context "{context}" (it has: {names}); fix: '
                    f"--context NAME with one of those"
                )
            kubernetes.config.load_kube_config(
                config_file=path, context=chosen, client_configuration=self.configuration
            )
        except ConfigError:
            raise
        except (kubernetes.config.ConfigException, yaml.YAMLError, OSError, ValueError) as err:
            detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ConfigError(f'cannot use kubeconfig "{path}": {detail}; {fix}') from None
        except Exception as err:  # the loader's own bugs on odd files (TypeError, KeyError...)
            raise ConfigError(
                f'cannot use kubeconfig "{path}": {type(err).__name__}: {err}; {fix}'
            ) from None
        namespace = ((entry or {}).get("context") or {}).get("namespace") or "default"
        return f'kubeconfig "{path}"', str(chosen or ""), str(namespace)

    # -- calls ----------------------------------------------------------------------------------
    def call(self, what: What, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`fn(*args, **kwargs)`, its failures raised as ClientError (see the module)."""
        try:
            return fn(*args, **kwargs)
        except ApiException as err:
            raise self.translate(err, what) from None
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise Unreachable(
                f"cannot reach the Kubernetes API server at {self.server} ({self.source}): "
                f"{_short(err)}; fix: check the cluster is up and the kubeconfig's server"
            ) from None

    def translate(self, err: ApiException, what: What) -> ClientError:
        """The ClientError for an error status (messages name the fix)."""
        message, details = _server_message(err)
        status = int(err.status or 0)
        if status == 401:
            return ConfigError(
                f"the API server at {self.server} refused the credentials of {self.source} "
                f"(401 Unauthorized: {message}); fix: renew the credentials in the kubeconfig"
            )
        if status == 403:
            return Forbidden(
                f"forbidden: {message}; fix: ask a cluster admin for a Role granting "
                f"'{what.verb}' on {what.resource}{what.where()} (check with: kubectl auth "
                f"can-i {what.verb} {what.resource}"
                + (f" -n {what.namespace})" if what.namespace else ")")
            )
        if status == 404:
            kind = str(details.get("kind") or "")
            if kind == "namespaces":
                return ApiFailure(
                    f'namespace "{details.get("name")}" does not exist; fix: create it '
                    f"(kubectl create namespace {details.get('name')}) or pick another with "
                    f"--namespace"
                )
            if what.resource == "tfjobs":
                if not details.get("name"):
                    return CrdMissing(
                        f"the cluster at {self.server} has no TFJob resource (kubeflow.org/v1 "
                        f"tfjobs): the TFJob CRD is not installed; fix: {CRD_FIX}"
                    )
                return JobNotFound(
                    f'TFJob "{what.name}" not found{what.where()}; fix: check the name '
                    f"(taas get lists them) and the namespace (--namespace)"
                )
        if status == 409 and what.verb == "create" and what.resource != "tfjobs":
            return AlreadyExists(
                f'{what.resource} "{what.name}" already exists{what.where()}; fix: delete it '
                f"first or choose another name"
            )
        if status == 409 and what.verb == "create":
            return AlreadyExists(
                f'TFJob "{what.name}" already exists{what.where()}; fix: delete it first '
                f"(taas delete {what.name}) or give the new one another metadata.name"
            )
        if status in (400, 422):
            return Invalid(f"the API server refused it: {message}")
        return ApiFailure(
            f"HTTP {status} on {what.verb} {what.resource}{what.where()}: {message or err.reason}"
        )

    def refusal(self, status: int, body: str, what: What) -> ClientError:
        """The ClientError for an error answer read outside the official client (a watch on
        `apiserver.transport`): the same messages as every other call's."""
        err = ApiException(status=status, reason=str(status))
        err.body = body
        return self.translate(err, what)

    def transport(self) -> Transport:
        """An async client of this connection's server and identity (`apiserver.transport`),
        for the one list-then-watch loop; open it inside the event loop that uses it."""
        return Transport(endpoint(self.configuration), concurrency=4, streams=4)

    # -- logs -----------------------------------------------------------------------------------
    def log_stream(self, namespace: str, pod: str, container: str, follow: bool) -> LogStream:
        """A pod container's log as it streams (`follow`) or as it is now."""
        what = What("get", "pods/log", namespace, pod)
        response = self.call(
            what,
            self.core.read_namespaced_pod_log,
            pod,
            namespace,
            container=container,
            follow=follow,
            _preload_content=False,
        )
        return LogStream(response)


class LogStream:
    """Lines of one log response, as bytes without the newline; `close()` ends it early."""

    def __init__(self, response: Any) -> None:
        self.response = response

    def __iter__(self) -> Iterator[bytes]:
        pending = b""
        try:
            for chunk in self.response.stream(4096, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                yield from lines
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError):
            pass  # closed from outside, or the server ended the stream
        if pending:
            yield pending

    def close(self) -> None:
        """Stop reading (from another thread)."""
        try:
            self.response.close()
            self.response.release_conn()
        except Exception:
            pass


def _short(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    reason = getattr(err, "reason", None)
    if reason is not None and str(reason).strip():
        text = str(reason)
    return text.splitlines()[0][:300]
