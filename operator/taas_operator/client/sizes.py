"""`taas validate`'s byte estimate: what each TFJob would make in etcd (`planner.budget`), and
the same refusal the operator gives a job over its --max-job-bytes.

    job_sizes(jobs, limit) -> dict[str, str]   # job name -> "namespace N; it would make ...";
                                               # InputError naming every job over `limit`
    add_size_argument(parser)                  # --max-job-bytes (0: no limit)
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from taas_operator.api.constants import DEFAULT_MAX_JOB_BYTES
from taas_operator.api.models import TFJob
from taas_operator.documents import InputError
from taas_operator.planner.budget import describe, job_bytes, over_budget


def job_sizes(jobs: Sequence[TFJob], limit: int) -> dict[str, str]:
    """Each job's estimate as a phrase, or InputError when any is over `limit` bytes."""
    refused = [(job.name, over_budget(job, limit)) for job in jobs]
    too_large = [f"TFJob {name} is {why}" for name, why in refused if why is not None]
    if too_large:
        raise InputError("\n* ".join(["the operator would refuse it:", *too_large]))
    return {
        job.name: f"namespace {job.namespace}; it would make {describe(job_bytes(job))}"
        for job in jobs
    }


def add_size_argument(parser: argparse.ArgumentParser) -> None:
    """`--max-job-bytes`, the operator's flag of the same name and default."""
    parser.add_argument(
        "--max-job-bytes",
        type=int,
        default=DEFAULT_MAX_JOB_BYTES,
        metavar="BYTES",
        help="refuse a TFJob whose pods and services would take more of etcd than this, as the "
        "operator's --max-job-bytes does (default %(default)s, 256 MiB; 0: no limit)",
    )
