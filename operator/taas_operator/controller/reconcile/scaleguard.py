"""A scale-up past --max-job-bytes, refused without ending the job (`planner.scaling`).

    guard = ScaleGuard(max_job_bytes, options)
    job, refusal = guard.held(key, job)   # the job to plan with; the refusal to post, or None
    guard.forget(key)

The estimate runs once per spec generation while within the budget; a refused generation is
estimated again each pass (the job to plan with is rebuilt) but said once.
"""

from __future__ import annotations

from taas_operator.api.models import TFJob
from taas_operator.controller.watch.jobcache import JobKey
from taas_operator.planner.objects import BuildOptions
from taas_operator.planner.scaling import held_scale

Version = tuple[str, int | None]  # (uid, generation)


class ScaleGuard:
    """What each job's last spec generation gave: within budget (None) or its refusal."""

    def __init__(self, max_job_bytes: int, options: BuildOptions) -> None:
        self.max_job_bytes, self.options = max_job_bytes, options
        self._seen: dict[JobKey, tuple[Version, str | None]] = {}

    def held(self, key: JobKey, job: TFJob) -> tuple[TFJob, str | None]:
        """The job at its last Worker count when a scale-up is refused (else `job`), and the
        refusal when this generation has not been refused before."""
        version = (job.metadata.uid or "", job.metadata.generation)
        known = self._seen.get(key)
        if known is not None and known[0] == version and known[1] is None:
            return job, None
        found = held_scale(job, self.max_job_bytes, self.options)
        self._seen[key] = (version, found[1] if found else None)
        if found is None:
            return job, None
        said_before = known is not None and known[0] == version
        return found[0], None if said_before else found[1]

    def forget(self, key: JobKey) -> None:
        self._seen.pop(key, None)
