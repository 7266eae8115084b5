"""Following TFJobs as they change: one list, then one watch, resumed when the server expires it.

    changes(client, namespace, all_namespaces=False, name=None, timeout=None)
        -> Iterator[JobChange]      # what TFJobClient.watch returns
    # client: a JobLister (a TFJobClient is one: connection, namespace, list_objects)

First every job there now (ADDED), then every change (ADDED, MODIFIED, DELETED). A watch the
server ends (its timeout) is opened again from the last version seen; one whose version the
server has forgotten (410 Gone) lists again and reports what changed meanwhile, so a dashboard's
view never misses a job nor keeps a deleted one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, Protocol

from taas_operator.api.constants import GROUP, PLURAL, VERSION
from taas_operator.api.models import TFJob
from taas_operator.client.kube import Connection, Expired, What
from taas_operator.client.manifests import read_job
from taas_operator.client.models import JobChange

Key = tuple[str, str]


class JobLister(Protocol):
    """What following needs of a client: its connection, its namespace, and one list of the
    stored TFJobs with the list's resourceVersion."""

    conn: Connection
    namespace: str

    def list_objects(
        self, namespace: str | None, all_namespaces: bool
    ) -> tuple[list[dict[str, Any]], str]: ...


def changes(
    client: JobLister,
    namespace: str | None,
    all_namespaces: bool = False,
    name: str | None = None,
    timeout: float | None = None,
) -> Iterator[JobChange]:
    """See the module."""
    deadline = None if timeout is None else time.monotonic() + timeout
    items, version = client.list_objects(namespace, all_namespaces)
    seen: dict[Key, TFJob] = {}
    for job in (read_job(i) for i in items if name is None or i["metadata"]["name"] == name):
        seen[(job.namespace, job.name)] = job
        yield JobChange(type="ADDED", job=job)
    while deadline is None or time.monotonic() < deadline:
        left = None if deadline is None else deadline - time.monotonic()
        try:
            for event in _watch(client, namespace, all_namespaces, name, version, left):
                obj = event["object"]
                version = str(obj["metadata"].get("resourceVersion") or version)
                job = read_job(obj)
                if event["type"] == "DELETED":
                    seen.pop((job.namespace, job.name), None)
                else:
                    seen[(job.namespace, job.name)] = job
                yield JobChange(type=event["type"], job=job)
        except Expired:
            items, version = client.list_objects(namespace, all_namespaces)
            now = {
                (j.namespace, j.name): j
                for j in map(read_job, items)
                if name is None or j.name == name
            }
            yield from _differences(seen, now)
            seen = now


def _differences(before: dict[Key, TFJob], now: dict[Key, TFJob]) -> Iterator[JobChange]:
    for key, job in now.items():
        old = before.get(key)
        if old is None:
            yield JobChange(type="ADDED", job=job)
        elif old.metadata.resource_version != job.metadata.resource_version:
            yield JobChange(type="MODIFIED", job=job)
    for key in set(before) - set(now):
        yield JobChange(type="DELETED", job=before[key])


def _watch(
    client: JobLister,
    namespace: str | None,
    all_namespaces: bool,
    name: str | None,
    version: str,
    timeout: float | None,
) -> Iterator[dict[str, Any]]:
    conn = client.conn
    selector = {"field_selector": f"metadata.name={name}"} if name else {}
    if all_namespaces:
        return conn.watch(
            What("watch", PLURAL),
            conn.custom.list_cluster_custom_object,
            GROUP,
            VERSION,
            PLURAL,
            resource_version=version,
            timeout=timeout,
            **selector,
        )
    ns = namespace or client.namespace
    return conn.watch(
        What("watch", PLURAL, ns),
        conn.custom.list_namespaced_custom_object,
        GROUP,
        VERSION,
        ns,
        PLURAL,
        resource_version=version,
        timeout=timeout,
        **selector,
    )
