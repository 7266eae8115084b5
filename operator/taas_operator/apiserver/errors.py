"""What can go wrong between TaaS and an apiserver: one hierarchy for the operator, the client,
the dashboard and `taas tensorboard`, each error's text naming what and how to fix it.

    ApiError                    any error answer (`status`), or no usable answer (status 0)
      ConfigError               no usable kubeconfig / context / credentials (also a 401)
      Unreachable               the apiserver cannot be reached
      Forbidden                 403: RBAC does not grant the verb
        PodSecurityRefused      403 of Pod Security Admission (not RBAC)
        QuotaExceeded           403 of a ResourceQuota (not RBAC)
      Invalid                   400/422: the object refused (or a local check, before sending)
      NotFound                  404
        CrdMissing              the cluster serves no TFJob resource (kubeflow.org/v1 tfjobs)
        JobNotFound             no TFJob of that name
      Conflict                  409: changed since read, already there, or another uid
        AlreadyExists           creating an object whose name is taken

    operator_error(status, data, request) -> ApiError   # the operator's words (its log, events)
    user_error(status, data, request, server, source)    # a person's words (CLI, dashboard)
    refused(status, data, request)                        # the server's words alone (its pages)
    unreachable(error, server, source) -> Unreachable     # no answer at all (TLS named as such)

Each has `status`, `request` (verb, resource, namespace, name, for messages) and
`server_message` (the apiserver's own words). The two audiences see the same classes with
different fixes: the operator's 403 names its Role, a user's names `kubectl auth can-i`.
"""

from __future__ import annotations

import contextlib
import json
import re
import ssl
from dataclasses import dataclass
from typing import Any

VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
PSA_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
#: `pods "x" is forbidden: violates PodSecurity "restricted:latest": a (b), c (d)`
_PSA = re.compile(r'violates PodSecurity "([^"]*)":\s*(.*)', re.DOTALL)
CRD_FIX = (
    "install the TFJob CRD: kubectl apply --server-side -f "
    "manifests/crd/tfjobs.kubeflow.org.yaml (from a TaaS checkout), or helm install taas "
    "charts/taas"
)


@dataclass(frozen=True)
class Request:
    """One request, for messages: the verb as RBAC names it, the resource, where, what."""

    verb: str
    resource: str
    namespace: str = ""
    name: str = ""

    @staticmethod
    def verb_of(method: str, name: str = "") -> str:
        """RBAC's verb for an HTTP method (a GET of a name is `get`, of a collection `list`)."""
        return VERBS.get(method, "get" if name else "list")

    def where(self) -> str:
        """` in namespace "NS"` (a user's message), or nothing."""
        return f' in namespace "{self.namespace}"' if self.namespace else ""


class ApiError(Exception):
    """A request the apiserver refused or could not answer; `str()` says why and the fix."""

    def __init__(
        self,
        message: str,
        status: int = 0,
        request: Request | None = None,
        server_message: str = "",
    ) -> None:
        super().__init__(message)
        self.status, self.server_message = status, server_message
        self.request = request or Request("", "")

    @property
    def verb(self) -> str:
        return self.request.verb

    @property
    def resource(self) -> str:
        return self.request.resource

    @property
    def namespace(self) -> str:
        return self.request.namespace


class ConfigError(ApiError):
    """The kubeconfig, its context or its credentials cannot be used."""


class Unreachable(ApiError):
    """No answer from the apiserver (refused, reset, timed out)."""


class Forbidden(ApiError):
    """403: RBAC does not grant the verb (or the namespace is terminating)."""


class PodSecurityRefused(Forbidden):
    """403 from Pod Security Admission: the pod breaks the level its namespace enforces
    (label `pod-security.kubernetes.io/enforce`). Not RBAC: granting verbs changes nothing."""

    @property
    def level(self) -> str:
        """The enforced level and version, e.g. "restricted:latest"."""
        found = _PSA.search(self.server_message)
        return found.group(1) if found else "?"

    @property
    def violations(self) -> str:
        """What the pod violates, in the server's words."""
        found = _PSA.search(self.server_message)
        return found.group(2).strip() if found else self.server_message


class QuotaExceeded(Forbidden):
    """403 from the ResourceQuota admission: the namespace's quota is used up. Not RBAC."""


class Invalid(ApiError):
    """400/422: the apiserver refused the object itself (e.g. a pod built from a bad template:
    a quantity it cannot parse is a 400, a field out of range a 422), or a local check did."""


class NotFound(ApiError):
    """404."""


class CrdMissing(NotFound):
    """The TFJob resource type does not exist on the server."""


class JobNotFound(NotFound):
    """No TFJob of that name."""


class Conflict(ApiError):
    """409: the object changed since it was read, or it already exists; also a write whose
    uid precondition failed (the name now holds another object)."""


class AlreadyExists(Conflict):
    """Creating an object whose name is taken."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: Invalid,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: Invalid,
}


def server_words(data: Any) -> tuple[str, dict[str, Any]]:
    """The message and details of an error answer (a Status object, as parsed or as its JSON
    text, or plain text)."""
    if isinstance(data, str) and data.lstrip().startswith("{"):
        with contextlib.suppress(ValueError):
            data = json.loads(data)
    if isinstance(data, dict):
        return str(data.get("message") or ""), dict(data.get("details") or {})
    return str(data or ""), {}


def operator_error(status: int, data: Any, request: Request) -> ApiError:
    """The error for an answer to the operator (`request.resource` as RBAC names it)."""
    message, _ = server_words(data)
    where = f"in namespace {request.namespace}" if request.namespace else "in every namespace"
    verb, resource = request.verb, request.resource
    if status == 403 and _PSA.search(message):
        refused = PodSecurityRefused("", status, request, message)
        text = (
            f"Pod Security Admission refused the pod: namespace {request.namespace} enforces "
            f'the "{refused.level}" Pod Security level (label {PSA_ENFORCE_LABEL}) and the pod '
            f"violates it: {refused.violations}"
        )
        return PodSecurityRefused(text, status, request, message)
    if status == 403 and "exceeded quota: " in message:
        return QuotaExceeded(
            f"the ResourceQuota of namespace {request.namespace} refused to {verb} {resource}: "
            f"{message}; fix: have an admin raise the quota (kubectl describe resourcequota "
            f"-n {request.namespace}), or lower the replicas",
            status,
            request,
            message,
        )
    if status == 403:
        return Forbidden(
            f"forbidden: the operator may not {verb} {resource} {where}; grant the verb "
            f"{verb!r} on {resource} in the operator's Role/ClusterRole (server said: {message})",
            status,
            request,
            message,
        )
    error = _BY_STATUS.get(status, ApiError)
    return error(f"HTTP {status} on {verb} {resource} {where}: {message}", status, request, message)


def user_error(status: int, data: Any, request: Request, server: str, source: str) -> ApiError:
    """The error for an answer to a person (the CLI, the client, the dashboard), whose
    credentials came from `source` (`request.resource` as kubectl names it)."""
    message, details = server_words(data)
    where = request.where()
    if status == 401:
        return ConfigError(
            f"the API server at {server} refused the credentials of {source} "
            f"(401 Unauthorized: {message}); fix: renew the credentials in the kubeconfig",
            status,
            request,
            message,
        )
    if status == 403:
        ns = f" -n {request.namespace})" if request.namespace else ")"
        return Forbidden(
            f"forbidden: {message}; fix: ask a cluster admin for a Role granting "
            f"'{request.verb}' on {request.resource}{where} (check with: kubectl auth "
            f"can-i {request.verb} {request.resource}{ns}",
            status,
            request,
            message,
        )
    text = _user_text(status, message, details, request, server)
    error = _user_class(status, details, request)
    return error(text, status, request, message)


def _user_class(status: int, details: dict[str, Any], request: Request) -> type[ApiError]:
    if status == 404 and request.resource == "tfjobs" and details.get("kind") != "namespaces":
        return JobNotFound if details.get("name") else CrdMissing
    if status == 409 and request.verb == "create":
        return AlreadyExists
    if status == 404 and details.get("kind") == "namespaces":
        return NotFound
    return _BY_STATUS.get(status, ApiError)


def _user_text(
    status: int, message: str, details: dict[str, Any], request: Request, server: str
) -> str:
    where = request.where()
    if status == 404 and details.get("kind") == "namespaces":
        ns = details.get("name")
        return (
            f'namespace "{ns}" does not exist; fix: create it (kubectl create namespace {ns}) '
            f"or pick another with --namespace"
        )
    if status == 404 and request.resource == "tfjobs":
        if not details.get("name"):
            return (
                f"the cluster at {server} has no TFJob resource (kubeflow.org/v1 tfjobs): the "
                f"TFJob CRD is not installed; fix: {CRD_FIX}"
            )
        return (
            f'TFJob "{request.name}" not found{where}; fix: check the name (taas get lists '
            f"them) and the namespace (--namespace)"
        )
    if status == 409 and request.verb == "create" and request.resource != "tfjobs":
        return (
            f'{request.resource} "{request.name}" already exists{where}; fix: delete it first '
            f"or choose another name"
        )
    if status == 409 and request.verb == "create":
        return (
            f'TFJob "{request.name}" already exists{where}; fix: delete it first (taas delete '
            f"{request.name}) or give the new one another metadata.name"
        )
    if status in (400, 422):
        return f"the API server refused it: {message}"
    return f"HTTP {status} on {request.verb} {request.resource}{where}: {message or status}"


def refused(status: int, data: Any, request: Request) -> ApiError:
    """The error for an answer shown in the apiserver's own words (the dashboard's pages,
    which say what was refused around them)."""
    message, _ = server_words(data)
    error = ConfigError if status == 401 else _BY_STATUS.get(status, ApiError)
    return error(message or f"HTTP {status}", status, request, message)


def unreachable(error: BaseException, server: str, source: str) -> Unreachable:
    """No answer from `server` (a refused or reset connection, a timeout), or none that TLS
    lets through (a certificate the kubeconfig's CA did not sign, another host's name)."""
    tls = tls_failure(error)
    if tls is not None:
        return Unreachable(
            f"the Kubernetes API server at {server} ({source}) failed TLS verification: "
            f"{reason(tls)}; fix: the kubeconfig's certificate-authority-data (or "
            f"certificate-authority) must be the cluster's CA and its server the address the "
            f"serving certificate names (kubectl config view --raw shows both)"
        )
    return Unreachable(
        f"cannot reach the Kubernetes API server at {server} ({source}): {reason(error)}; fix: "
        f"check the cluster is up and the kubeconfig's server"
    )


def tls_failure(error: BaseException) -> ssl.SSLError | None:
    """The TLS error behind a connection error (aiohttp wraps it), if one is."""
    found: ssl.SSLError | None = None
    seen: BaseException | None = error
    for _ in range(8):  # a chain of causes, never a loop; the innermost TLS error says most
        if seen is None:
            break
        if isinstance(seen, ssl.SSLError):
            found = seen
        inner = getattr(seen, "certificate_error", None) or getattr(seen, "os_error", None)
        seen = inner if isinstance(inner, BaseException) else (seen.__cause__ or seen.__context__)
    return found


def reason(error: BaseException) -> str:
    """One short line for a connection error (aiohttp's without its bracketed OS detail)."""
    text = str(error).strip() or type(error).__name__
    if "Cannot connect" in text:
        text = text.split(" [")[0]
    return text.splitlines()[0][:300]
