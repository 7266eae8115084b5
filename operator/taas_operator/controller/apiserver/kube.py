"""The one module of TaaS that talks to the Kubernetes API.

    KubeClient.load(kubeconfig: str | None, concurrency: int) -> KubeClient
    client.connection_info() -> kopf.ConnectionInfo          # kopf logs in with the same identity
    await client.get_job(ns, name) -> dict | None
    await client.replace_job_status(job, status) -> dict     # PUT, resourceVersion-checked
    await client.delete_job(ns, name, uid)
    async for items, rv in client.list_pages(kind, ns, selector): ...  # ns "": every namespace
    async for event in client.stream(kind, ns, query): ...           # a watch (`informer`)
    await client.get(kind, ns, name) -> dict | None                   # None: it does not exist
    await client.create(kind, ns, manifest) -> dict | None            # None: it already existed
    await client.delete(kind, ns, name, uid=uid) -> bool              # False: it was already gone
    await client.replace_spec(kind, ns, name, spec, uid=uid)          # JSON patch of /spec
    await client.post_event(job: dict, type_, reason, message)

Writes to an existing object (`delete`, `replace_spec`, `patch_metadata`, `annotate`) take the
uid of the object as read: the apiserver applies them to that object only (a DELETE's
`preconditions.uid`; a patch setting `metadata.uid`, which is immutable), and
raises `Conflict` when the name now holds another object. Who may be written at all is
`reconcile.owned`'s one check, on what was read (`seen.Seen`).

Everything is plain JSON dicts (camelCase), exactly as the API serves them. Authentication comes
from the official client's config loaders (kubeconfig, or in-cluster service account); the HTTP
calls go through `transport.Transport` (aiohttp on the operator's event loop), at most
`concurrency` in flight at once across the whole process (the `concurrency` setting).
Non-2xx answers raise `ApiError` (`Conflict` for 409, `Forbidden` for 403, `PodSecurityRefused` for
a 403 of Pod Security Admission, `QuotaExceeded` for one of a ResourceQuota, `Invalid` for 400/422),
whose message names the verb and resource, so a missing RBAC verb is obvious in the log.
"""

from __future__ import annotations

import re
import socket
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import kopf
import kubernetes.client
import kubernetes.config

from taas_operator.api.constants import API_VERSION, KIND
from taas_operator.api.models import format_time
from taas_operator.api.resources import EVENT, POD, POLICY, SERVICE, TFJOB, Kind
from taas_operator.apiserver.transport import Transport, endpoint
from taas_operator.controller import metrics

COMPONENT = "taas-operator"
_MAX_EVENT_MESSAGE = 1024


CHILD_KINDS = {kind.plural: kind for kind in (POD, SERVICE, POLICY)}
Objects = list[dict[str, Any]]
#: Objects per page of a large LIST (the apiserver's snapshot stays consistent across pages).
LIST_PAGE = 500

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class ApiError(Exception):
    """A non-2xx answer; `str()` names the verb, resource, namespace and the server's message."""

    def __init__(
        self, status: int, verb: str, kind: Kind, namespace: str, sub: str, message: str
    ) -> None:
        self.status, self.verb, self.kind, self.namespace = status, verb, kind, namespace
        self.resource = kind.rbac_name(sub)
        self.server_message = message
        self.where = f"in namespace {namespace}" if namespace else "in every namespace"
        super().__init__(f"HTTP {status} on {verb} {self.resource} {self.where}: {message}")


class Conflict(ApiError):
    """409: the object changed since it was read, or it already exists; also a write whose
    uid precondition failed (the name now holds another object)."""


class Forbidden(ApiError):
    """403: RBAC does not grant the verb (or the namespace is terminating). A pod refused by
    Pod Security Admission is a `PodSecurityRefused` instead."""

    def __str__(self) -> str:
        return (
            f"forbidden: the operator may not {self.verb} {self.resource} {self.where}; "
            f"grant the verb {self.verb!r} on {self.resource} in the "
            f"operator's Role/ClusterRole (server said: {self.server_message})"
        )


class PodSecurityRefused(ApiError):
    """403 from Pod Security Admission: the pod breaks the level its namespace enforces
    (label `pod-security.kubernetes.io/enforce`). Not RBAC: granting verbs changes nothing."""

    def __init__(
        self, status: int, verb: str, kind: Kind, namespace: str, sub: str, message: str
    ) -> None:
        super().__init__(status, verb, kind, namespace, sub, message)
        found = _PSA.search(message)
        #: The enforced level and version, e.g. "restricted:latest"; what the pod violates.
        self.level = found.group(1) if found else "?"
        self.violations = found.group(2).strip() if found else message

    def __str__(self) -> str:
        return (
            f"Pod Security Admission refused the pod: namespace {self.namespace} enforces the "
            f'"{self.level}" Pod Security level (label {PSA_ENFORCE_LABEL}) and the pod '
            f"violates it: {self.violations}"
        )


class QuotaExceeded(ApiError):
    """403 from the ResourceQuota admission: the namespace's quota is used up. Not RBAC."""

    def __str__(self) -> str:
        return (
            f"the ResourceQuota of namespace {self.namespace} refused to {self.verb} "
            f"{self.resource}: {self.server_message}; fix: have an admin raise the quota "
            f"(kubectl describe resourcequota -n {self.namespace}), or lower the replicas"
        )


#: `pods "x" is forbidden: violates PodSecurity "restricted:latest": a (b), c (d)`
_PSA = re.compile(r'violates PodSecurity "([^"]*)":\s*(.*)', re.DOTALL)
PSA_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
#: A patch's uid precondition failed: the uid it sets is not the stored object's.
_UID_MISMATCH = re.compile(r"metadata\.uid: Invalid value")


class NotFound(ApiError):
    """404."""


class Invalid(ApiError):
    """400/422: the apiserver refused the object itself (e.g. a pod built from a bad template:
    a quantity it cannot parse is a 400, a field out of range a 422)."""


_ERRORS: dict[int, type[ApiError]] = {
    400: Invalid,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: Invalid,
}


def load_configuration(kubeconfig: str | None) -> kubernetes.client.Configuration:
    """The kubeconfig given, else in-cluster service account, else $KUBECONFIG/~/.kube/config."""
    config = kubernetes.client.Configuration()
    if kubeconfig:
        kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=config)
        return config
    try:
        kubernetes.config.load_incluster_config(client_configuration=config)
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config(client_configuration=config)
    return config


class KubeClient:
    """Async JSON access to the resources the operator manages."""

    def __init__(self, config: kubernetes.client.Configuration, concurrency: int = 16) -> None:
        self.config = config
        self._endpoint = endpoint(config)
        self._transport = Transport(self._endpoint, concurrency)
        self.instance = socket.gethostname()

    @classmethod
    def load(cls, kubeconfig: str | None, concurrency: int = 16) -> KubeClient:
        """A client for the kubeconfig given (or in-cluster / default kubeconfig)."""
        return cls(load_configuration(kubeconfig), concurrency)

    async def close(self) -> None:
        """Close the connection pool (from the event loop, e.g. kopf's cleanup)."""
        await self._transport.close()

    def connection_info(self) -> kopf.ConnectionInfo:
        """The same server and identity for kopf's own watches."""
        header = self._endpoint.authorization()
        scheme, _, token = header.partition(" ") if header else ("", "", "")
        return kopf.ConnectionInfo(
            server=self.config.host,
            ca_path=self.config.ssl_ca_cert,
            insecure=not self.config.verify_ssl,
            scheme=scheme or None,
            token=token or None,
            certificate_path=self.config.cert_file,
            private_key_path=self.config.key_file,
        )

    # -- transport ------------------------------------------------------------------------------
    async def _request(
        self,
        method: str,
        kind: Kind,
        namespace: str,
        name: str = "",
        sub: str = "",
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        ok: tuple[int, ...] = (),
    ) -> tuple[int, Any]:
        path = kind.path(namespace, name, sub)
        status, data = await self._transport.call(method, path, query, body, content_type)
        if 200 <= status < 300 or status in ok:
            return status, data
        verb = _VERBS.get(method, "get" if name else "list")
        message = data.get("message", "") if isinstance(data, dict) else str(data)
        metrics.api_error(verb, kind.plural + (f"/{sub}" if sub else ""), status)
        error = _ERRORS.get(status, ApiError)
        if status == 403 and _PSA.search(message):
            error = PodSecurityRefused
        elif status == 403 and "exceeded quota: " in message:
            error = QuotaExceeded
        raise error(status, verb, kind, namespace, sub, message)

    # -- TFJobs ---------------------------------------------------------------------------------
    async def get_job(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The TFJob, or None when it does not exist."""
        status, data = await self._request("GET", TFJOB, namespace, name, ok=(404,))
        return None if status == 404 else dict(data)

    async def replace_job_status(
        self, job: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        """PUT the status subresource; raises Conflict when `job` is no longer the latest.

        The body carries only what the status subresource reads: the object's identity and
        resourceVersion (the precondition) and the status; the apiserver keeps everything
        else from the stored object (it ignores the rest of a status PUT anyway).
        """
        meta = job["metadata"]
        keys = ("name", "namespace", "uid", "resourceVersion")
        identity = {k: meta[k] for k in keys if k in meta}
        body = {"apiVersion": API_VERSION, "kind": KIND, "metadata": identity, "status": status}
        _, data = await self._request(
            "PUT", TFJOB, meta["namespace"], meta["name"], "status", body=body
        )
        return dict(data)

    async def delete_job(self, namespace: str, name: str, uid: str) -> bool:
        """Delete the TFJob if it is still the incarnation `uid`; False when already gone."""
        body = {"preconditions": {"uid": uid}, "propagationPolicy": "Background"}
        status, _ = await self._request("DELETE", TFJOB, namespace, name, body=body, ok=(404,))
        return status != 404

    # -- owned objects --------------------------------------------------------------------------
    async def list_pages(
        self, kind: Kind, namespace: str, selector: str, limit: int = LIST_PAGE
    ) -> AsyncIterator[tuple[Objects, int]]:
        """Objects of `kind` matching the label `selector` in `namespace` (every namespace when
        empty), `limit` at a time, each page with the list's resourceVersion (0 when not a
        number): one consistent snapshot, without holding it all in memory at once."""
        query = {"labelSelector": selector, "limit": str(limit)}
        while True:
            _, data = await self._request("GET", kind, namespace, query=query)
            meta = data.get("metadata") or {}
            try:
                version = int(meta.get("resourceVersion") or 0)
            except ValueError:
                version = 0
            yield list(data.get("items") or []), version
            if not meta.get("continue"):
                return
            query = {**query, "continue": str(meta["continue"])}

    def stream(self, kind: Kind, namespace: str, query: dict[str, str]) -> AsyncIterator[Any]:
        """A watch of `kind` in `namespace` (every namespace when empty): its events, parsed."""
        return self._transport.stream(kind.path(namespace), query)

    async def get(self, kind: Kind, namespace: str, name: str) -> dict[str, Any] | None:
        """One object, or None when it does not exist."""
        status, data = await self._request("GET", kind, namespace, name, ok=(404,))
        return None if status == 404 else dict(data)

    async def create(
        self, kind: Kind, namespace: str, manifest: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Create; the object as stored, or None when an object of that name already exists."""
        status, data = await self._request("POST", kind, namespace, body=manifest, ok=(409,))
        return None if status == 409 else dict(data or {})

    async def delete(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        grace_seconds: int | None = None,
        *,
        uid: str,
    ) -> bool:
        """Delete the object `uid` (background propagation; `grace_seconds` 0: at once,
        without waiting for a kubelet); False when it was already gone; Conflict when the
        name holds another object now."""
        body: dict[str, Any] = {"propagationPolicy": "Background", "preconditions": {"uid": uid}}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        status, _ = await self._request("DELETE", kind, namespace, name, body=body, ok=(404,))
        return status != 404

    async def replace_spec(
        self, kind: Kind, namespace: str, name: str, spec: dict[str, Any], *, uid: str
    ) -> bool:
        """Set `.spec` of the object `uid` exactly (a JSON patch: needs only the `patch`
        verb; it sets the uid too, which the apiserver refuses to change); False when it is
        gone."""
        patch = [
            {"op": "replace", "path": "/metadata/uid", "value": uid},
            {"op": "replace", "path": "/spec", "value": spec},
        ]
        return await self._patch(kind, namespace, name, patch, "json-patch", uid)

    async def patch_metadata(
        self, kind: Kind, namespace: str, name: str, metadata: dict[str, Any], *, uid: str
    ) -> bool:
        """A strategic-merge patch of `.metadata` of the object `uid` (core kinds:
        `$deleteFromPrimitiveList/...` removes list entries without a read); False when it
        is already gone."""
        body = {"metadata": {**metadata, "uid": uid}}
        return await self._patch(kind, namespace, name, body, "strategic-merge-patch", uid)

    async def annotate(
        self, kind: Kind, namespace: str, name: str, annotations: dict[str, str], *, uid: str
    ) -> bool:
        """Set annotations of the object `uid` (a JSON merge patch: custom resources too,
        which take no strategic merge); False when it is already gone."""
        body = {"metadata": {"annotations": annotations, "uid": uid}}
        return await self._patch(kind, namespace, name, body, "merge-patch", uid)

    async def _patch(
        self, kind: Kind, namespace: str, name: str, body: Any, patch_type: str, uid: str
    ) -> bool:
        """PATCH with the uid in it: another object under the name is a Conflict (the
        apiserver answers a uid that is not the stored one with 422: it is immutable)."""
        try:
            status, _ = await self._request(
                "PATCH", kind, namespace, name, body=body,
                content_type=f"application/{patch_type}+json", ok=(404,),
            )  # fmt: skip
        except Invalid as err:
            if not _UID_MISMATCH.search(err.server_message):
                raise
            raise Conflict(409, err.verb, kind, namespace, "", err.server_message) from None
        return status != 404

    # -- events ---------------------------------------------------------------------------------
    async def post_event(self, job: dict[str, Any], type_: str, reason: str, message: str) -> None:
        """Record a core/v1 Event on the TFJob (what `kubectl describe tfjob` shows)."""
        meta = job["metadata"]
        stamp = format_time(datetime.now(UTC))
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta['name']}.{uuid.uuid4().hex[:16]}",
                "namespace": meta["namespace"],
            },
            "involvedObject": {
                "apiVersion": API_VERSION,
                "kind": KIND,
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "type": type_,
            "reason": reason,
            "message": message[:_MAX_EVENT_MESSAGE],
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance[:128],
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        await self._request("POST", EVENT, meta["namespace"], body=body)
