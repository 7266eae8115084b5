"""Where the dashboard's jobs come from: a cluster (`dashboard.cluster`) or a local run
(`local_source`). The server talks to either through this interface only.

    Source
        .mode                                        # "cluster" or "local"
        .board                                       # the jobs list (dashboard.board.JobsBoard)
        await .start()  await .close()
        await .open_job(ns, name) -> JobWatch        # kept current until release_job
        await .release_job(watch)
        .logs(ns, name, replica | None) -> AsyncIterator[LogLine]   # follows; None: all merged
        await .permissions(ns) -> Permissions        # what this user may do there
        await .set_suspend(ns, name, bool)  await .delete(ns, name)
        await .create(manifest) -> (namespace, name)
        await .create_program(made, names) -> (namespace, name)   # a TFJob and its program's
                                                                  # ConfigMap (client.programs)
        .info() -> dict                              # for the page's header

A refused or failed action raises `ActionError` with the HTTP status the page gets and a message
that says what happened in the apiserver's (or the runner's) own words.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel

from taas_operator.client.programs import ProgramManifests
from taas_operator.dashboard.board import JobsBoard, JobWatch


class ActionError(Exception):
    """An action the user asked for did not happen; `status` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class LogLine(BaseModel):
    """One line of a replica's log; `replica` is the short name `taas run` prefixes, worker-1."""

    replica: str
    text: str


class Permission(BaseModel):
    """One action: allowed or not, and why not."""

    allowed: bool
    reason: str = ""


class Permissions(BaseModel):
    """What the page may offer in one namespace."""

    suspend: Permission
    delete: Permission
    create: Permission


def refused_everywhere(reason: str) -> Permissions:
    """Every action off, for one reason (a read-only dashboard, a local run)."""
    off = Permission(allowed=False, reason=reason)
    return Permissions(suspend=off, delete=off, create=off)


def short_name(job: str, pod: str) -> str:
    """`mnist-worker-1` -> `worker-1`: the prefix `taas run` writes before each log line."""
    return pod[len(job) + 1 :] if pod.startswith(job + "-") else pod


class Source(ABC):
    """A place jobs run, seen through the dashboard's one data model."""

    mode: ClassVar[str]

    def __init__(self) -> None:
        self.board = JobsBoard()

    @abstractmethod
    async def start(self) -> None:
        """Begin following the jobs list."""

    @abstractmethod
    async def close(self) -> None:
        """Stop every watch and stream."""

    @abstractmethod
    async def open_job(self, namespace: str, name: str) -> JobWatch:
        """A watch of one job (shared by pages showing the same job)."""

    @abstractmethod
    async def release_job(self, watch: JobWatch) -> None:
        """A page stopped showing the job."""

    @abstractmethod
    def logs(self, namespace: str, name: str, replica: str | None) -> AsyncIterator[LogLine]:
        """The job's log lines, recent ones first, then as they come (until cancelled)."""

    @abstractmethod
    async def permissions(self, namespace: str) -> Permissions:
        """What the user may do to jobs in `namespace`."""

    @abstractmethod
    async def set_suspend(self, namespace: str, name: str, suspend: bool) -> None:
        """Suspend or resume the job (spec.runPolicy.suspend)."""

    @abstractmethod
    async def delete(self, namespace: str, name: str) -> None:
        """Delete the job."""

    @abstractmethod
    async def create(self, manifest: dict[str, Any]) -> tuple[str, str]:
        """Create a validated TFJob; its (namespace, name)."""

    @abstractmethod
    async def create_program(
        self, made: ProgramManifests, names: Mapping[str, str]
    ) -> tuple[str, str]:
        """Create a program's TFJob, then its ConfigMap owned by it; the TFJob's (namespace,
        name). `names`: how the caller labels the options (an AlreadyExists names the name's)."""

    @abstractmethod
    def info(self) -> dict[str, Any]:
        """What the page header says: mode, cluster/context, namespaces, read-only or not."""
