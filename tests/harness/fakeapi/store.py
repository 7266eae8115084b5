"""The fake apiserver's objects and verbs: one lock, one resourceVersion counter, the event
window its watches replay from (see the package docstring for what it models and what not).

    store = Store(window=10_000, pod_groups=False)
    store.handle(method, path, query, body, content_type) -> (status, data)   # any thread
    async for event in store.watch(path, query): ...    # on the caller's loop
    store.compact()                   # forget every event so far: older watches get 410 Gone
    store.requests[("list", "pods")]  # requests served, by verb and resource
"""

from __future__ import annotations

import asyncio
import re
import threading
import uuid
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from tests.harness.fakeapi.defaults import apply_defaults, initial_status
from tests.harness.fakeapi.patches import PatchError, apply_patch
from tests.harness.fakeapi.resources import POD_GROUPS, RESOURCES, Path, Resource, parse_path
from tests.harness.fakeapi.selectors import Fields, Labels, SelectorError

Obj = dict[str, Any]
Key = tuple[str, str, str, str]  # group, plural, namespace, name
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
#: Continue tokens kept (each holds the rest of one list's snapshot); older ones expire (410).
CONTINUES = 64


def copied(obj: Any) -> Any:
    """A deep copy, as a round trip through JSON makes it (what goes over the wire)."""
    return orjson.loads(orjson.dumps(obj))


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Failure(Exception):
    """An error answer: a Kubernetes Status."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def body(self) -> Obj:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}  # fmt: skip


def _conflict(resource: Resource, name: str, why: str) -> Failure:
    return Failure(
        409, "Conflict", f'Operation cannot be fulfilled on {resource.qualified()} "{name}": {why}'
    )


def _precondition(resource: Resource, name: str, field: str, wanted: str, found: str) -> Failure:
    return _conflict(
        resource, name,
        f"Precondition failed: {field} in precondition: {wanted}, {field} in object meta: {found}",
    )  # fmt: skip


def _invalid(resource: Resource, name: str, why: str) -> Failure:
    return Failure(422, "Invalid", f'{resource.kind} "{name}" is invalid: {why}')


@dataclass(frozen=True)
class Change:
    """One write: the object before (None: created) and after (a deletion: the object as it
    was deleted, at the deletion's resourceVersion)."""

    version: int
    resource: Resource
    namespace: str
    old: Obj | None
    new: Obj
    deleted: bool = False


@dataclass(eq=False)
class Watcher:
    resource: Resource
    namespace: str
    labels: Labels
    fields: Fields
    deliver: Callable[[bytes], None]

    def event(self, change: Change) -> bytes | None:
        """The event this watch sees for a change (an object leaving the selector: DELETED)."""
        if change.resource != self.resource or self.namespace not in ("", change.namespace):
            return None
        was = change.old is not None and self._matches(change.old)
        now = not change.deleted and self._matches(change.new)
        if now:
            kind = "MODIFIED" if was else "ADDED"
        elif was:
            kind = "DELETED"
        else:
            return None
        return orjson.dumps({"type": kind, "object": change.new})

    def _matches(self, obj: Obj) -> bool:
        labels = (obj.get("metadata") or {}).get("labels")
        return self.labels.matches(labels) and self.fields.matches(obj)


class Store:
    """The objects of every served resource, behind one lock."""

    def __init__(self, window: int = 10_000, pod_groups: bool = False) -> None:
        self.served = dict(RESOURCES)
        if pod_groups:
            self.served[(POD_GROUPS.group, POD_GROUPS.plural)] = POD_GROUPS
        self.requests: Counter[tuple[str, str]] = Counter()
        self._lock = threading.RLock()
        self._objects: dict[Key, Obj] = {}
        self._version = 100
        self._window: deque[Change] = deque(maxlen=window)
        self._floor = self._version  # the oldest version a watch can replay from
        self._watchers: set[Watcher] = set()
        self._continues: OrderedDict[str, tuple[int, list[Obj]]] = OrderedDict()

    # -- the verbs ------------------------------------------------------------------------------
    def handle(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """One request; the status code and the answer (a Status on errors, as JSON)."""
        where = parse_path(path, self.served)
        if where is None:
            return 404, "404 page not found"
        query = query or {}
        try:
            with self._lock:
                return self._dispatch(method, where, query, copied(body), content_type)
        except Failure as failure:
            return failure.code, failure.body()

    def _dispatch(
        self, method: str, where: Path, query: dict[str, str], body: Any, content_type: str
    ) -> Any:
        resource, name = where.resource, where.name
        verb = {"GET": "get" if name else "list", "POST": "create", "PUT": "update",
                "PATCH": "patch", "DELETE": "delete"}.get(method, method)  # fmt: skip
        self.requests[(verb, resource.plural + (f"/{where.sub}" if where.sub else ""))] += 1
        if method == "GET" and not name:
            return 200, self._list(where, query)
        if method == "POST" and not name:
            return 201, self._create(where, body)
        if not name:
            raise Failure(405, "MethodNotAllowed", f"{method} is not allowed on a collection")
        if method == "GET":
            return 200, copied(self._current(where))
        if method == "PUT":
            return 200, self._update(where, body, patched=False)
        if method == "PATCH":
            if resource.custom and "strategic-merge-patch" in content_type:
                raise Failure(415, "UnsupportedMediaType", "the body of the request was in an "
                              "unknown format - accepted media types include: "
                              "application/json-patch+json, application/merge-patch+json, "
                              "application/apply-patch+yaml")  # fmt: skip
            try:
                patched = apply_patch(self._current(where), body, content_type)
            except PatchError as err:
                raise _invalid(resource, name, str(err)) from None
            return 200, self._update(where, patched, patched=True)
        if method == "DELETE":
            return 200, self._delete(where, {**(body or {}), **_grace(query)})
        raise Failure(405, "MethodNotAllowed", f"{method} is not allowed")

    def _key(self, where: Path, name: str | None = None) -> Key:
        resource = where.resource
        return (resource.group, resource.plural, where.namespace, name or where.name)

    def _current(self, where: Path) -> Obj:
        found = self._objects.get(self._key(where))
        if found is None:
            raise Failure(404, "NotFound", f'{where.resource.qualified()} "{where.name}" not found')
        return found

    def _create(self, where: Path, body: Any) -> Obj:
        resource = where.resource
        if not isinstance(body, dict):
            raise Failure(400, "BadRequest", "the body of a create must be an object")
        meta = dict(body.get("metadata") or {})
        name = str(meta.get("name") or "")
        if not name and meta.get("generateName"):
            name = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
        if not name:
            raise _invalid(resource, "", "metadata.name: Required value: name or generateName")
        if meta.get("namespace") not in (None, "", where.namespace):
            raise Failure(400, "BadRequest", "the namespace of the provided object does not "
                          "match the namespace sent on the request")  # fmt: skip
        self._check_name(resource, name)
        if resource.namespaced:
            self._check_namespace(resource, where.namespace, name)
        key = self._key(where, name)
        if key in self._objects:
            raise Failure(409, "AlreadyExists", f'{resource.qualified()} "{name}" already exists')
        for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(field, None)
        meta.update(name=name, uid=str(uuid.uuid4()), creationTimestamp=_now())
        if resource.namespaced:
            meta["namespace"] = where.namespace
        if resource.generation:
            meta["generation"] = 1
        obj = {**body, "apiVersion": resource.api_version, "kind": resource.kind, "metadata": meta}
        apply_defaults(resource, obj, None)
        if resource.status:
            obj.pop("status", None)
            status = initial_status(resource, obj)
            if status is not None:
                obj["status"] = status
        return self._commit(resource, key, None, obj)

    def _check_name(self, resource: Resource, name: str) -> None:
        pattern, most = (_LABEL_NAME, 63) if resource.plural == "services" else (_NAME, 253)
        if len(name) > most or not pattern.match(name):
            raise _invalid(resource, name, f'metadata.name: Invalid value: "{name}"')

    def _check_namespace(self, resource: Resource, namespace: str, name: str) -> None:
        found = self._objects.get(("", "namespaces", "", namespace))
        if found is None:
            raise Failure(404, "NotFound", f'namespaces "{namespace}" not found')
        if (found.get("status") or {}).get("phase") == "Terminating":
            raise Failure(403, "Forbidden", f'{resource.plural} "{name}" is forbidden: unable '
                          f"to create new content in namespace {namespace} because it is being "
                          "terminated")  # fmt: skip

    def _update(self, where: Path, body: Any, patched: bool) -> Obj:
        resource, name = where.resource, where.name
        current = self._current(where)
        if not isinstance(body, dict):
            raise Failure(400, "BadRequest", "the body of an update must be an object")
        meta = dict(body.get("metadata") or {})
        version = meta.get("resourceVersion")
        if not version and resource.custom and not patched:
            raise _invalid(resource, name, "metadata.resourceVersion: Invalid value: 0x0: "
                           "must be specified for an update")  # fmt: skip
        stored = current["metadata"]
        if meta.get("uid") and meta["uid"] != stored["uid"]:
            if patched:  # the patch set another uid: the field is immutable
                raise _invalid(
                    resource, name, f'metadata.uid: Invalid value: "{meta["uid"]}": '
                    "field is immutable"
                )  # fmt: skip
            raise _precondition(resource, name, "UID", meta["uid"], stored["uid"])
        if version and version != stored["resourceVersion"]:
            raise _conflict(resource, name, "the object has been modified; please apply your "
                            "changes to the latest version and try again")  # fmt: skip
        if meta.get("name", name) != name:
            raise Failure(400, "BadRequest", "the name of the object does not match the URL")
        if where.sub == "status":
            new = copied(current)
            new.pop("status", None)
            if body.get("status") is not None:
                new["status"] = body["status"]
        else:
            new = {**body, "apiVersion": resource.api_version, "kind": resource.kind}
            keep = ("name", "namespace", "uid", "creationTimestamp", "generation",
                    "deletionTimestamp", "deletionGracePeriodSeconds")  # fmt: skip
            new["metadata"] = {**meta, **{k: stored[k] for k in keep if k in stored}}
            apply_defaults(resource, new, current)
            if resource.status:
                new.pop("status", None)
                if "status" in current:
                    new["status"] = copied(current["status"])
            if resource.generation and _spec(new) != _spec(current):
                new["metadata"]["generation"] = int(stored.get("generation") or 0) + 1
        new["metadata"]["resourceVersion"] = stored["resourceVersion"]
        if new == current:
            return copied(current)  # nothing changed: nothing written, no event
        key = self._key(where)
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            return self._commit(resource, key, current, None)
        return self._commit(resource, key, current, new)

    def _delete(self, where: Path, options: Obj) -> Obj:
        resource, name = where.resource, where.name
        current = self._current(where)
        stored = current["metadata"]
        preconditions = options.get("preconditions") or {}
        if preconditions.get("uid") not in (None, stored["uid"]):
            raise _precondition(resource, name, "UID", preconditions["uid"], stored["uid"])
        if preconditions.get("resourceVersion") not in (None, stored["resourceVersion"]):
            raise _precondition(
                resource, name, "ResourceVersion", preconditions["resourceVersion"],
                stored["resourceVersion"],
            )  # fmt: skip
        key = self._key(where)
        grace = options.get("gracePeriodSeconds")
        if resource.plural == "namespaces":  # no namespace controller ever finishes it
            new = copied(current)
            new["status"] = {"phase": "Terminating"}
            new["metadata"].setdefault("deletionTimestamp", _now())
            return self._commit(resource, key, current, new) if new != current else current
        if resource.plural == "pods":  # graceful: deletionTimestamp first, then gone at 0
            if stored.get("deletionTimestamp") and grace != 0:
                return copied(current)
            period = _pod_grace(current, grace)
            new = copied(current)
            new["metadata"].setdefault("deletionTimestamp", _now())
            new["metadata"]["deletionGracePeriodSeconds"] = period
            marked = self._commit(resource, key, current, new) if new != current else current
            if period > 0 or stored.get("finalizers"):
                return marked
            return self._commit(resource, key, self._objects[key], None)
        if stored.get("finalizers"):
            if stored.get("deletionTimestamp"):
                return copied(current)
            new = copied(current)
            new["metadata"].update(deletionTimestamp=_now(), deletionGracePeriodSeconds=0)
            return self._commit(resource, key, current, new)
        return self._commit(resource, key, current, None)

    def _list(self, where: Path, query: dict[str, str]) -> Obj:
        resource = where.resource
        token = query.get("continue")
        if token:
            found = self._continues.pop(token, None)
            if found is None:
                raise Failure(410, "Expired", "The provided continue parameter is too old to "
                              "display a consistent list result.")  # fmt: skip
            version, items = found
        else:
            try:
                labels, fields = (
                    Labels.parse(query.get("labelSelector")),
                    Fields.parse(query.get("fieldSelector")),
                )
            except SelectorError as err:
                raise Failure(400, "BadRequest", str(err)) from None
            version = self._version
            items = [
                copied(obj)
                for (group, plural, namespace, _), obj in sorted(self._objects.items())
                if (group, plural) == (resource.group, resource.plural)
                and where.namespace in ("", namespace)
                and labels.matches(obj["metadata"].get("labels"))
                and fields.matches(obj)
            ]
            if not resource.custom:  # a built-in list's items carry no kind
                for item in items:
                    item.pop("kind", None)
                    item.pop("apiVersion", None)
        limit = int(query.get("limit") or 0)
        page, rest = (items[:limit], items[limit:]) if limit > 0 else (items, [])
        meta: Obj = {"resourceVersion": str(version)}
        if rest:
            token = uuid.uuid4().hex
            self._continues[token] = (version, rest)
            while len(self._continues) > CONTINUES:
                self._continues.popitem(last=False)
            meta.update({"continue": token, "remainingItemCount": len(rest)})
        return {"kind": f"{resource.kind}List", "apiVersion": resource.api_version,
                "metadata": meta, "items": page}  # fmt: skip

    # -- writes and watches ---------------------------------------------------------------------
    def _commit(self, resource: Resource, key: Key, old: Obj | None, new: Obj | None) -> Obj:
        self._version += 1
        if new is None:
            assert old is not None
            del self._objects[key]
            new = copied(old)
            new["metadata"]["resourceVersion"] = str(self._version)
            change = Change(self._version, resource, key[2], old, new, deleted=True)
        else:
            new["metadata"]["resourceVersion"] = str(self._version)
            self._objects[key] = new
            change = Change(self._version, resource, key[2], old, new)
        if len(self._window) == self._window.maxlen:
            self._floor = self._window[0].version
        self._window.append(change)
        for watcher in list(self._watchers):
            event = watcher.event(change)
            if event is not None:
                watcher.deliver(event)
        return copied(new)

    def compact(self) -> None:
        """Forget every event so far (etcd's compaction): a watch from an older version than
        now is answered 410 Gone."""
        with self._lock:
            self._window.clear()
            self._floor = self._version

    async def watch(self, path: str, query: dict[str, str]) -> AsyncIterator[Any]:
        """A watch's events on the running loop (the real apiserver's order and types), until
        its timeoutSeconds; a last BOOKMARK when `allowWatchBookmarks`."""
        where = parse_path(path, self.served)
        if where is None or where.name:
            raise LookupError(f"no watch at {path}")
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def deliver(event: bytes) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, event)

        try:
            labels = Labels.parse(query.get("labelSelector"))
            fields = Fields.parse(query.get("fieldSelector"))
        except SelectorError as err:
            yield {"type": "ERROR", "object": Failure(400, "BadRequest", str(err)).body()}
            return
        watcher = Watcher(where.resource, where.namespace, labels, fields, deliver)
        with self._lock:
            self.requests[("watch", where.resource.plural)] += 1
            first = self._replay(watcher, query.get("resourceVersion") or "")
            self._watchers.add(watcher)
        try:
            for event in first:
                yield orjson.loads(event)
            timeout = float(query.get("timeoutSeconds") or 1800)
            deadline = loop.time() + timeout
            while (left := deadline - loop.time()) > 0:
                try:
                    event = await asyncio.wait_for(queue.get(), left)
                except TimeoutError:
                    break
                yield orjson.loads(event)
            if query.get("allowWatchBookmarks") == "true":
                with self._lock:
                    version = str(self._version)
                yield {"type": "BOOKMARK", "object": {
                    "kind": where.resource.kind, "apiVersion": where.resource.api_version,
                    "metadata": {"resourceVersion": version}}}  # fmt: skip
        finally:
            with self._lock:
                self._watchers.discard(watcher)

    def _replay(self, watcher: Watcher, version: str) -> list[bytes]:
        """The events a watch from `version` starts with: every object as ADDED ("" or "0"),
        the window's changes after it, or 410 Gone when the window no longer reaches back."""
        if version in ("", "0"):
            events = []
            for (group, plural, namespace, _), obj in sorted(self._objects.items()):
                resource = self.served[(group, plural)]
                event = watcher.event(Change(self._version, resource, namespace, None, obj))
                if event is not None:
                    events.append(event)
            return events
        since = int(version)
        if since < self._floor:
            gone = Failure(410, "Expired", f"too old resource version: {since} ({self._floor})")
            return [orjson.dumps({"type": "ERROR", "object": gone.body()})]
        events = []
        for change in self._window:
            if change.version > since:
                event = watcher.event(change)
                if event is not None:
                    events.append(event)
        return events


def _spec(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _grace(query: dict[str, str]) -> Obj:
    grace = query.get("gracePeriodSeconds")
    return {"gracePeriodSeconds": int(grace)} if grace is not None else {}


def _pod_grace(pod: Obj, grace: int | None) -> int:
    """A pod's grace period: 0 when no kubelet runs it (not bound to a node, or ended), else
    the one asked for, else its spec's."""
    bound = bool((pod.get("spec") or {}).get("nodeName"))
    if not bound or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    if grace is not None:
        return grace
    return int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
