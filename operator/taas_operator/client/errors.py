"""What can go wrong talking to a cluster about TFJobs, as exceptions whose text says what and
how to fix it. Every client call raises one of these (never a bare ApiException, never a
swallowed error); the `taas` commands print the text and exit 2 (1 for a job that failed or a
wait that timed out: the job's own outcome, not the command's).

    ClientError                 base class
      ConfigError               no usable kubeconfig / context / credentials
      Unreachable               the API server cannot be reached
      CrdMissing                the cluster has no TFJob CRD (kubeflow.org/v1 tfjobs)
      JobNotFound               no TFJob of that name in that namespace
      AlreadyExists             creating a TFJob whose name is taken
      Forbidden                 RBAC refuses the user the verb (the server's words kept)
      Invalid                   the API server (or the local checks) refused the TFJob
      ApiFailure                any other error status
    JobFailed(job)              wait: the job Failed; the message is the job's own
    WaitTimeout(job)            wait: the time ran out; `job` is its last state
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taas_operator.api.models import TFJob


class ClientError(Exception):
    """A problem of the request or its context; exit 2 in the CLI."""


class ConfigError(ClientError):
    """The kubeconfig, its context or its credentials cannot be used."""


class Unreachable(ClientError):
    """No answer from the API server."""


class CrdMissing(ClientError):
    """The TFJob resource type does not exist on the server."""


class JobNotFound(ClientError):
    """No TFJob of that name."""


class AlreadyExists(ClientError):
    """A TFJob of that name exists already."""


class Forbidden(ClientError):
    """RBAC refuses the request."""


class Invalid(ClientError):
    """The TFJob was refused as invalid."""


class ApiFailure(ClientError):
    """Another error status from the server."""


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
        state = job.status.conditions[-1].type if job.status.conditions else "no condition yet"
        super().__init__(
            f"TFJob {job.namespace}/{job.name}: none of {', '.join(conditions)} after "
            f"{waited:.0f}s (now: {state})"
        )
