"""Training progress, read from each running job's chief and folded into its status.

    poller = ProgressPoller(settings, request)
    poller.fold(key, job, pods, plan, now)    # in a pass, after plan_job: status.progress
    poller.forget(key)                        # the job is gone
    await poller.close()

How the operator learns a job's progress: it pulls. The trainer library's chief serves its
latest `ProgressReport` at `GET http://<chief pod IP>:2223/progress` (`taas.core.publish`; the
port is the chief's `TAAS_PROGRESS_PORT` when its template sets one). The operator reads it only
from
the port the chief's pod declares for it (`taas-progress`, which the operator puts on the
tensorflow container when it creates the pod: `planner.objects`), never from a port the job's
spec names later, and never from a chief with hostNetwork (its IP is the node's: a port there
could be any service of the node). A task per running job reads it
as soon as the chief runs, again after 1, 2, 4, ... s until the first report arrives (a chief
imports TensorFlow before it serves), then every `progress_interval` (30 s; after failures 60,
120, ... at most 5 min) with a 2 s timeout,
and when a report is newer than the last it asks for a pass, which folds it into the status at
most once per interval (`planner.progress.fold_progress`: alone, or riding along with a write
the lifecycle makes anyway). A chief that serves nothing (a program without the library, one
still starting) costs one refused connection per read and no pass, no write, no API call.

Why pull, weighed against the two other ways (Kubeflow Trainer v2 weighed the first two):
- exec into rank 0 and read a file: every read is an exec stream through the apiserver to the
  kubelet (a process started in the container, a SPDY/WebSocket upgrade: apiserver and kubelet
  load per job per interval), the image needs a shell or `cat`, and the operator needs
  `create pods/exec` in every namespace it watches -- code execution in every training pod,
  which TaaS's least-privilege RBAC (no secrets, no exec) refuses to grant.
- the trainer reports to a server (the operator): every training pod needs egress to the
  operator and the operator's NetworkPolicy an ingress open to every namespace with jobs; the
  operator must tell a job's reports from forgeries (a per-job token is a Secret, which TaaS
  never touches; a service-account token is off in the examples, as `restricted` wants), every
  pod must be told where to report (changing the pods TaaS builds), and with peering the
  reports must reach the active replica.
- pull (chosen): no new RBAC at all (the operator already lists the job's pods, so it knows
  the chief's IP); the apiserver sees only the status write, at most one per interval per job,
  and none for programs without the library; the endpoint is read-only (it runs nothing,
  unlike TensorFlow's own servers). The per-job NetworkPolicy gains one rule: the progress
  port, from the operator's namespace only (`operator_namespace`, which the chart passes); the
  TF ports stay the job's own. The operator's own NetworkPolicy limits ingress only, so its
  connections to pods need nothing. The cost: the operator must reach pod IPs (in the cluster it
  does; run from outside, reads fail within 2 s and nothing is written) and makes one small
  HTTP request per running job per interval.
When the chief ends, its server is gone: the library writes its last report to the container's
termination message (`terminationMessagePath`), the kubelet puts it in the pod's status, and the
pass that sees the pod end folds it (`planner.final_report`), so a finished job keeps its final
step, loss and 100% (or where it stopped) with no read at all.
`taas run` cannot connect into its jobs' private network namespaces, so there the chief writes
the same document to a file the runner reads (`taas_operator.local.job_run`); the fold and the
columns are the same code (`planner.progress`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime

import aiohttp
from pydantic import ValidationError

from taas_operator.api import ProgressReport
from taas_operator.api.constants import COND_SUSPENDED, PROGRESS_PATH
from taas_operator.api.models import TFJob
from taas_operator.controller import metrics
from taas_operator.controller.watch.jobcache import JobKey
from taas_operator.planner import (
    ObservedPod,
    Plan,
    chief_pod,
    final_report,
    fold_progress,
)
from taas_operator.settings import OperatorSettings

logger = logging.getLogger("taas_operator.controller")

READ_TIMEOUT_S = 2.0
#: Read a little after the next progress write may go (the last write + the interval), so the
#: pass a new report asks for can write it at once instead of waiting for a second pass.
ALIGN_S = 0.2
MAX_BYTES = 64 * 1024
MAX_BACKOFF_S = 300.0
#: Until the first report: read again after 1, 2, 4, ... s (at most the interval).
FIRST_READ_RETRY_S = 1.0


def progress_url(pod_ip: str, port: int) -> str:
    """Where a chief serves its progress (IPv6 addresses in brackets)."""
    host = f"[{pod_ip}]" if ":" in pod_ip else pod_ip
    return f"http://{host}:{port}{PROGRESS_PATH}"


class ProgressPoller:
    """One reading task per running job; the newest report of each, for the passes."""

    def __init__(self, settings: OperatorSettings, request: Callable[[JobKey], None]) -> None:
        self.enabled, self.interval = settings.progress, float(settings.progress_interval)
        self.request = request
        self._reports: dict[JobKey, ProgressReport] = {}
        self._written: dict[JobKey, datetime] = {}  # our last progress write, per job
        self._urls: dict[JobKey, str] = {}
        self._tasks: dict[JobKey, asyncio.Task[None]] = {}
        self._session: aiohttp.ClientSession | None = None

    def fold(
        self, key: JobKey, job: TFJob, pods: list[ObservedPod], plan: Plan, now: datetime
    ) -> None:
        """Fold the newest report into `plan` (rate-bounded), and read the chief while the job
        runs (a task per job, started or stopped here)."""
        if not self.enabled:
            return
        before = plan.status.progress
        report = self._reports.get(key)
        last = final_report(job, pods)
        if last is not None and (report is None or last.time >= report.time):
            report = self._reports[key] = last
        fold_progress(
            job,
            plan,
            report,
            now,
            interval=self.interval,
            last_update=self._written.get(key),
        )
        after = plan.status.progress
        if after is not None and after is not before and after.last_update_time == now:
            self._written[key] = now
        ended = plan.status.finished or plan.status.is_true(COND_SUSPENDED)
        chief = None if ended else chief_pod(job, pods)
        url = None
        if chief is not None and chief.pod_ip and chief.progress_port:
            url = progress_url(chief.pod_ip, chief.progress_port)
        self._track(key, url)

    def forget(self, key: JobKey) -> None:
        """The job is gone: stop reading it and drop what was kept."""
        self._track(key, None)
        self._reports.pop(key, None)
        self._written.pop(key, None)

    async def close(self) -> None:
        """Stop every reading task and the HTTP session."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        self._urls.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _track(self, key: JobKey, url: str | None) -> None:
        if self._urls.get(key) == url and (url is None or key in self._tasks):
            return
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()
        self._urls.pop(key, None)
        if url is not None:
            self._urls[key] = url
            self._tasks[key] = asyncio.get_running_loop().create_task(self._poll(key, url))

    async def _poll(self, key: JobKey, url: str) -> None:
        failures, served = 0, key in self._reports
        while True:
            try:
                report = await self._read(url)
            except Exception:  # a bug here must not end the reads of this job silently
                logger.exception("progress %s: reading failed", url)
                report = None
            if report is None:
                failures += 1
            else:
                failures, served = 0, True
                old = self._reports.get(key)
                if old is None or report.time > old.time:
                    self._reports[key] = report
                    self.request(key)
            if not served:  # the chief is still starting: ask again soon
                await asyncio.sleep(min(FIRST_READ_RETRY_S * 2 ** (failures - 1), self.interval))
                continue
            delay = self.interval * 2 ** max(failures - 1, 0)
            await asyncio.sleep(min(delay, max(MAX_BACKOFF_S, self.interval)))
            written = self._written.get(key)
            if written is not None:  # read when the next write may go: one pass, not two
                left = (written - datetime.now(UTC)).total_seconds() + self.interval + ALIGN_S
                if left > 0:
                    await asyncio.sleep(left)

    async def _read(self, url: str) -> ProgressReport | None:
        if self._session is None:
            # trust_env off: pod IPs must never go through an HTTP(S)_PROXY
            self._session = aiohttp.ClientSession(trust_env=False)
        timeout = aiohttp.ClientTimeout(total=READ_TIMEOUT_S)
        try:
            async with self._session.get(url, timeout=timeout, allow_redirects=False) as answer:
                body = await answer.content.read(MAX_BYTES + 1)
                status = answer.status
        except (aiohttp.ClientError, TimeoutError, OSError) as err:
            logger.debug("progress %s: %s", url, err or type(err).__name__)
            metrics.progress_read("unreachable")
            return None
        try:
            if status != 200 or len(body) > MAX_BYTES:
                raise ValueError(f"HTTP {status}, {len(body)} bytes")
            report = ProgressReport.model_validate_json(body)
        except (ValueError, ValidationError) as err:
            logger.debug("progress %s: not a progress report: %s", url, err)
            metrics.progress_read("invalid")
            return None
        metrics.progress_read("ok")
        return report
