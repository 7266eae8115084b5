"""The operator's verbs on the apiserver: JSON reads and writes of TFJobs, pods, services,
NetworkPolicies and events, and their watches, on the operator's event loop.

    KubeClient.load(kubeconfig: str | None, concurrency: int, on_error=None) -> KubeClient
    client.endpoint                                           # kopf logs in with the same identity
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
the controller's one check (`controller.reconcile.owned`), on what was read.

Everything is plain JSON dicts (camelCase), exactly as the API serves them. Credentials come
from the one loader (`credentials.load`); the HTTP calls go through `transport.Transport`, at
most `concurrency` in flight at once across the whole process (the `concurrency` setting).
Non-2xx answers raise the operator's `errors.ApiError`s (`errors.operator_error`: `Conflict`,
`Forbidden`, `PodSecurityRefused`, `QuotaExceeded`, `Invalid`, `NotFound`), whose message names
the verb and resource, so a missing RBAC verb is obvious in the log; `on_error(verb, resource,
status)` counts each (the operator's metrics).
"""

from __future__ import annotations

import re
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

from taas_operator.api.constants import API_VERSION, KIND
from taas_operator.api.models import format_time
from taas_operator.api.resources import EVENT, POD, POLICY, SERVICE, TFJOB, Kind
from taas_operator.apiserver.credentials import load
from taas_operator.apiserver.errors import Invalid, Request, operator_error
from taas_operator.apiserver.transport import Endpoint, Transport

COMPONENT = "taas-operator"
_MAX_EVENT_MESSAGE = 1024


CHILD_KINDS = {kind.plural: kind for kind in (POD, SERVICE, POLICY)}
Objects = list[dict[str, Any]]
#: Objects per page of a large LIST (the apiserver's snapshot stays consistent across pages).
LIST_PAGE = 500

#: A patch's uid precondition failed: the uid it sets is not the stored object's.
_UID_MISMATCH = re.compile(r"metadata\.uid: Invalid value")
#: What a refused request is told to: (verb, resource, status).
OnError = Callable[[str, str, int], None]


class KubeClient:
    """Async JSON access to the resources the operator manages."""

    def __init__(
        self,
        endpoint: Endpoint,
        concurrency: int = 16,
        on_error: OnError | None = None,
        transport: Transport | None = None,
    ) -> None:
        """``transport``: another answerer of the same calls (the tests' in-memory apiserver);
        by default HTTP to ``endpoint``."""
        self.endpoint = endpoint
        self._transport = transport or Transport(endpoint, concurrency)
        self._on_error = on_error
        self.instance = socket.gethostname()

    @classmethod
    def load(
        cls, kubeconfig: str | None, concurrency: int = 16, on_error: OnError | None = None
    ) -> KubeClient:
        """A client for the kubeconfig given, else as kubectl finds one (`credentials.load`:
        $KUBECONFIG, ~/.kube/config, the pod's service account)."""
        return cls(load(kubeconfig).endpoint, concurrency, on_error)

    async def close(self) -> None:
        """Close the connection pool (from the event loop, e.g. kopf's cleanup)."""
        await self._transport.close()

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
        verb = Request.verb_of(method, name)
        if self._on_error is not None:
            self._on_error(verb, kind.plural + (f"/{sub}" if sub else ""), status)
        raise operator_error(status, data, Request(verb, kind.rbac_name(sub), namespace, name))

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
            raise operator_error(409, err.server_message, err.request) from None
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
