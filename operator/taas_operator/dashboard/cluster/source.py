"""ClusterSource: the dashboard's Source (`dashboard.source`) for a cluster, as one identity.

    ClusterSource.load(kubeconfig, context, namespaces=[])    # as kubectl connects
    ClusterSource.for_token(base, token, namespaces, names) -> (status, user, uid, source)
                                                              # a viewer's token

Outages: each watch says on the page what is out of date and since when, and catches up by
itself (`follow`). Bounds: `MAX_JOB_PAGES` jobs watched at once (`jobwatches`), `logs.MAX_PODS`
pods per log stream, one follow per pod shared by every view of it (`logs`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from taas_operator.apiserver.blocking import Connection
from taas_operator.apiserver.errors import ConfigError
from taas_operator.apiserver.kubeapi import KubeApi
from taas_operator.client.jobs import TFJobClient
from taas_operator.client.programs import ProgramManifests
from taas_operator.dashboard.board import JobWatch
from taas_operator.dashboard.cluster import rbac
from taas_operator.dashboard.cluster.joblist import JobList
from taas_operator.dashboard.cluster.jobwatches import JobWatches
from taas_operator.dashboard.cluster.logs import PodLogs
from taas_operator.dashboard.cluster.scopes import NamespaceNames
from taas_operator.dashboard.source import LogLine, Permissions, Source
from taas_operator.documents import InputError

MAX_JOB_PAGES = 32
RESOLVE_SECONDS = 30.0


def connect(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    """The identity kubectl would use (--kubeconfig, $KUBECONFIG, ~/.kube/config, else the
    pod's service account; --context or the current one); InputError naming the fix."""
    try:
        return Connection.load(kubeconfig, context)
    except ConfigError as exc:
        raise InputError(str(exc)) from None


class ClusterSource(Source):
    """TFJobs, pods, events and logs of a cluster, seen as one identity."""

    mode = "cluster"

    def __init__(
        self,
        api: KubeApi,
        client: TFJobClient,
        namespaces: list[str] | None = None,
        names: NamespaceNames | None = None,
    ) -> None:
        super().__init__()
        self.api, self.client = api, client
        self.namespaces = list(namespaces or [])
        self.jobs = JobList(api, self.board, self.namespaces, names)
        self.pages = JobWatches(api, MAX_JOB_PAGES)
        self.pod_logs = PodLogs(api)
        self.tasks: list[asyncio.Task[None]] = []

    @classmethod
    def load(
        cls, kubeconfig: str | None, context: str | None, namespaces: list[str] | None = None
    ) -> ClusterSource:
        """As kubectl would connect; InputError naming the fix when the kubeconfig is unusable."""
        connection = connect(kubeconfig, context)
        api = KubeApi.of(connection)
        return cls(api, TFJobClient.of(connection), namespaces)

    @classmethod
    async def for_token(
        cls,
        base: Connection,
        token: str,
        namespaces: list[str] | None = None,
        names: NamespaceNames | None = None,
    ) -> tuple[int, str, str, ClusterSource | None]:
        """What the apiserver says of a viewer's `token` (SelfSubjectReview status, user name,
        uid) and, when it accepts it (201), a source acting with it on `base`'s cluster
        (`names`: the namespaces the dashboard itself may list, `scopes`)."""
        connection = base.with_token(token)
        api = KubeApi.of(connection)
        status, user, uid = await api.identify()
        if status != 201:
            await api.close()
            return status, user, uid, None
        return status, user, uid, cls(api, TFJobClient.of(connection), namespaces, names)

    async def start(self) -> None:
        await self.api.who_am_i()
        # Which namespaces to show, before the page asks (its Submit form's namespace); an
        # apiserver that does not answer in time leaves it to the jobs list, which retries.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(RESOLVE_SECONDS):
                await self.jobs.resolve()
        self.tasks.append(asyncio.create_task(self.jobs.follow()))

    async def close(self) -> None:
        tasks = self.tasks + self.pages.close() + self.pod_logs.close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.api.close()

    async def open_job(self, namespace: str, name: str) -> JobWatch:
        return await self.pages.open(namespace, name)

    async def release_job(self, watch: JobWatch) -> None:
        await self.pages.release(watch)

    def logs(self, namespace: str, name: str, replica: str | None) -> AsyncIterator[LogLine]:
        return self.pod_logs.follow(namespace, name, replica)

    async def permissions(self, namespace: str) -> Permissions:
        patch, delete, create = await asyncio.gather(
            rbac.allowed(self.api, "patch", namespace),
            rbac.allowed(self.api, "delete", namespace),
            rbac.allowed(self.api, "create", namespace),
        )
        return Permissions(suspend=patch, delete=delete, create=create)

    async def set_suspend(self, namespace: str, name: str, suspend: bool) -> None:
        act = self.client.suspend if suspend else self.client.resume
        await rbac.act(lambda: act(name, namespace))

    async def delete(self, namespace: str, name: str) -> None:
        await rbac.act(lambda: self.client.delete(name, namespace))

    async def create(self, manifest: dict[str, Any]) -> tuple[str, str]:
        namespace = str(manifest["metadata"].get("namespace") or self.api.namespace)
        made = await rbac.act(lambda: self.client.create(manifest, namespace))
        return made.namespace, made.name

    async def create_program(
        self, made: ProgramManifests, names: Mapping[str, str]
    ) -> tuple[str, str]:
        job = await rbac.act(lambda: self.client.create_program(made, names))
        return job.namespace, job.name

    def info(self) -> dict[str, Any]:
        context = f" · context {self.api.context_name}" if self.api.context_name else ""
        user = f" · {self.api.user}" if self.api.user else ""
        return {
            "mode": self.mode,
            "where": f"{self.api.server}{context}{user}",
            "readOnly": False,
            "defaultNamespace": next(
                (ns for ns in self.jobs.shown if ns is not None), self.api.namespace
            ),
            "since": time.time(),
        }
