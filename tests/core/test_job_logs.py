"""client.logs.JobLogs, the one replica-log follower (`taas logs -f` and the dashboard): what it
reads and when it ends, on pods and log streams played by the test (the apiserver paths are the
real follower's; the CLI and dashboard paths run on a real apiserver in tests/operator and
tests/dashboard)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from taas_operator.apiserver.errors import ApiError
from taas_operator.client.logs import JobLogs
from taas_operator.client.models import LogLine, ReplicaPod


def _pod(replica: str, restarts: int = 0, started: bool = True) -> ReplicaPod:
    return ReplicaPod(
        name=f"job-{replica}", replica=replica, uid=f"uid-{replica}", restarts=restarts,
        started=started,
    )  # fmt: skip


class Cluster:
    """Pods by look, and each (pod, restart)'s log; a log asked too early is refused once."""

    def __init__(self, looks: list[list[ReplicaPod]], refuse: set[str] = frozenset()) -> None:
        self.looks, self.refuse = looks, set(refuse)
        self.asked: list[str] = []

    async def pods(self) -> list[ReplicaPod]:
        return self.looks.pop(0) if len(self.looks) > 1 else self.looks[0]

    async def lines(self, path: str, query: dict[str, str]) -> AsyncIterator[str]:
        pod = path.split("/")[-2]
        self.asked.append(pod)
        if pod in self.refuse:
            self.refuse.discard(pod)
            raise ApiError("container is waiting to start")
        yield f"{pod} line {self.asked.count(pod)}"


async def _read(logs: JobLogs, finished_after: int) -> list[LogLine]:
    looks = 0

    async def finished() -> bool:
        nonlocal looks
        looks += 1
        return looks > finished_after

    return [line async for line in logs.follow(finished)]


def test_new_restarted_and_refused_replicas_are_read_and_it_ends_with_the_job() -> None:
    worker, ps = _pod("worker-0"), _pod("ps-0")
    cluster = Cluster(
        [[worker, _pod("ps-0", started=False)], [worker, ps], [_pod("worker-0", 1), ps]],
        refuse={"job-ps-0"},
    )
    refusals: list[str] = []
    logs = JobLogs(
        "ns", cluster.pods, cluster.lines, poll_s=0.01,
        refused=lambda pod, error: refusals.append(f"{pod.replica}: {error}"),
    )  # fmt: skip
    lines = asyncio.run(_read(logs, finished_after=5))
    texts = sorted(line.text for line in lines)
    # worker-0 once per container run, ps-0 once it started and was no longer refused
    assert texts == ["job-ps-0 line 2", "job-worker-0 line 1", "job-worker-0 line 2"]
    assert refusals == ["ps-0: container is waiting to start"]
    assert {line.replica for line in lines} == {"worker-0", "ps-0"}


def test_a_refusal_the_caller_raises_ends_the_follow() -> None:
    cluster = Cluster([[_pod("worker-0")]], refuse={"job-worker-0"})

    def refused(pod: ReplicaPod, error: ApiError) -> None:
        raise error

    logs = JobLogs("ns", cluster.pods, cluster.lines, poll_s=0.01, refused=refused)
    try:
        asyncio.run(_read(logs, finished_after=100))
    except ApiError as err:
        assert "waiting to start" in str(err)
    else:
        raise AssertionError("the refusal did not reach the caller")


def test_at_most_limit_pods_are_read_and_a_note_says_which_were_left_out() -> None:
    pods = [_pod(f"worker-{i}") for i in range(4)]
    cluster = Cluster([pods])
    logs = JobLogs("ns", cluster.pods, cluster.lines, poll_s=0.01, limit=2)
    lines = asyncio.run(_read(logs, finished_after=2))
    assert sorted(cluster.asked) == ["job-worker-0", "job-worker-1"]
    (note,) = [line for line in lines if not line.pod]
    assert "first 2 of 4 replicas" in note.text and "worker-2, worker-3" in note.text
