"""What can go wrong with TFJobs on a cluster beyond the apiserver's own errors, each text
saying what and how to fix it. Every client call raises an `apiserver.errors.ApiError` (the one
hierarchy: ConfigError, Unreachable, Forbidden, Invalid, NotFound with CrdMissing and
JobNotFound, Conflict with AlreadyExists; never a swallowed error) or one of these; the `taas`
commands print the text and exit 2 (1 for a job that failed or a wait that timed out: the
job's own outcome, not the command's).

    ClientError(ApiError)       a problem the client finds itself (a flag, a file, a replica)
    JobFailed(job)              wait: the job Failed; the message is the job's own
    WaitTimeout(job)            wait: the time ran out; `job` is its last state
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from taas_operator.api.state import job_state
from taas_operator.apiserver.errors import ApiError

if TYPE_CHECKING:
    from taas_operator.api.models import TFJob


class ClientError(ApiError):
    """A problem of the request the client finds itself, before or without asking the
    apiserver (a flag, a file, a replica that is not there)."""


class JobFailed(Exception):
    """The job ended Failed; `str()` is its Failed condition's message."""

    def __init__(self, job: TFJob) -> None:
        self.job = job
        failed = job.status.condition("Failed")
        message = failed.message if failed and failed.message else "no message"
        super().__init__(f"TFJob {job.namespace}/{job.name} failed: {message}")


class WaitTimeout(Exception):
    """The job reached none of the conditions in time; `job` is its last state."""

    def __init__(self, job: TFJob, waited: float, conditions: tuple[str, ...]) -> None:
        self.job = job
        state = job_state(job.status).label if job.status.conditions else "no condition yet"
        super().__init__(
            f"TFJob {job.namespace}/{job.name}: none of {', '.join(conditions)} after "
            f"{waited:.0f}s (now: {state})"
        )
