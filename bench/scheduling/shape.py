"""The size of one gang run: nodes, jobs, queues and their GPU quotas, workers per job.

GangShape.full()    # 200 jobs of 8-64 workers, 1,000 nodes, 4 queues of 1,500 GPUs
GangShape.quick()   # CI-sized: 12 jobs of 8-16 workers, 10 nodes, 2 queues of 32 GPUs
"""

from __future__ import annotations

import random

from pydantic import BaseModel

GPUS_PER_NODE = 8


class GangShape(BaseModel):
    """The size of one run."""

    nodes: int
    jobs: int
    queues: int
    quota: int  # GPUs per queue
    min_workers: int
    max_workers: int
    run_seconds: float
    timeout_s: float
    seed: int = 23

    @classmethod
    def full(cls) -> GangShape:
        """200 jobs of 8-64 workers over 1,000 nodes (8,000 GPUs), 4 queues of 1,500 GPUs."""
        return cls(
            nodes=1000, jobs=200, queues=4, quota=1500, min_workers=8, max_workers=64,
            run_seconds=30, timeout_s=3600,
        )  # fmt: skip

    @classmethod
    def quick(cls) -> GangShape:
        """CI-sized: 12 jobs of 8-16 workers over 10 nodes (80 GPUs), 2 queues of 32 GPUs: about
        three rounds of jobs per queue."""
        return cls(
            nodes=10, jobs=12, queues=2, quota=32, min_workers=8, max_workers=16,
            run_seconds=5, timeout_s=240,
        )  # fmt: skip

    def sizes(self) -> list[int]:
        """Each job's worker count (seeded: the same for every run of a shape)."""
        pick = random.Random(self.seed)
        return [pick.randint(self.min_workers, self.max_workers) for _ in range(self.jobs)]

    @staticmethod
    def namespace(queue: int) -> str:
        """The namespace of a queue's jobs (its LocalQueue `team` lives there)."""
        return f"gang-team-{queue}"
