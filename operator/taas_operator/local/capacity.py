"""Whether the replicas of a `taas run` fit this machine, checked before anything starts.

    Machine.here() -> Machine(cpus, memory_available)      # sched_getaffinity, MemAvailable
    check_fit(jobs, machine) -> Fit(problems, warnings)

Every replica of every job runs at once, so the whole run is weighed against the machine, as a
scheduler weighs a pod's requests against a node:
- memory: each replica's `resources.requests.memory` (else `limits.memory`) of its `tensorflow`
  container, else `REPLICA_MEMORY`, summed, against MemAvailable from /proc/meminfo.
  `REPLICA_MEMORY` is what one more replica of the MNIST example (1 PS + 2 workers,
  TensorFlow 2 CPU) peaked at, rounded up, counting the shared libraries split among the
  replicas (PSS), not once in each (RSS).
- CPU: the `resources.requests.cpu` (else `limits.cpu`) summed, against the CPUs this process
  may run on: more is a warning (the replicas share the CPUs, slower but correct); and the
  number of processes: more than `PROCESSES_PER_CPU_LIMIT` per CPU is a problem (dozens of
  TensorFlow processes importing at once on a few cores miss their start-up deadlines), more
  than `PROCESSES_PER_CPU_WARN` per CPU a warning (it runs, slowly).
`problems` refuse the run (exit 2) unless `taas run --allow-oversubscribe`, which turns them into
warnings; `warnings` are printed and the run goes on. Resources are never enforced locally
(`local.unapplied` says so): they only decide whether the run fits.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from taas_operator.api import TFJob
from taas_operator.api.constants import DEFAULT_CONTAINER_NAME
from taas_operator.api.quantity import parse_quantity

MIB = 1024 * 1024
REPLICA_MEMORY = 512 * MIB
PROCESSES_PER_CPU_WARN = 2
PROCESSES_PER_CPU_LIMIT = 8


def quantity(value: Any) -> float | None:
    """A Kubernetes quantity ("500m", "2Gi", 1, "1e3") as a number; None if it is not one."""
    exact = parse_quantity(value)
    return None if exact is None else float(exact)


class Machine(BaseModel):
    """What this machine offers a run: CPUs this process may use, memory available now."""

    cpus: int
    memory_available: int | None  # bytes; None where /proc/meminfo cannot be read

    @classmethod
    def here(cls) -> Machine:
        """Measured now."""
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
        available = None
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
        except OSError:
            pass
        return cls(cpus=cpus, memory_available=available)


class Fit(BaseModel):
    """Why the run does not fit (`problems`) and what will be slow (`warnings`), about `what`
    (e.g. "3 replicas of TFJob mnist-async")."""

    what: str
    replicas: int
    problems: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def misfit(self) -> str:
        """The problems in one sentence."""
        verb = "does" if self.replicas == 1 else "do"
        return f"{self.what} {verb} not fit this machine: {'; '.join(self.problems)}"


def _resource(container: dict[str, Any], name: str) -> float | None:
    """requests.<name>, else limits.<name>, of a container, as a number."""
    resources = container.get("resources") or {}
    for kind in ("requests", "limits"):
        value = (resources.get(kind) or {}).get(name)
        if value is not None and (found := quantity(value)) is not None:
            return found
    return None


def _gib(size: float) -> str:
    return f"{size / 1024**3:.1f} GiB"


def check_fit(jobs: Sequence[TFJob], machine: Machine) -> Fit:
    """Weigh every replica of `jobs` against `machine`."""
    processes, estimated, memory, cpu = 0, 0, 0.0, 0.0
    for job in jobs:
        for rtype in job.replica_types():
            spec = job.spec.tf_replica_specs[rtype]
            container = next(
                (c for c in spec.containers() if c.get("name") == DEFAULT_CONTAINER_NAME), {}
            )
            asked = _resource(container, "memory")
            estimated += spec.replicas if asked is None else 0
            memory += spec.replicas * (REPLICA_MEMORY if asked is None else asked)
            cpu += spec.replicas * (_resource(container, "cpu") or 0.0)
            processes += spec.replicas
    names = ", ".join(job.name for job in jobs)
    what = f"{processes} replica{'s' if processes != 1 else ''} of TFJob {names}"
    fit = Fit(what=what, replicas=processes)
    if machine.memory_available is not None and memory > machine.memory_available:
        each = f"{REPLICA_MEMORY // MIB} MiB each, what one TensorFlow replica takes"
        requested = "their resources.requests.memory"
        basis = (
            each
            if estimated == processes
            else requested
            if estimated == 0
            else f"{estimated} at {each}, the rest at {requested}"
        )
        fit.problems.append(
            f"memory: about {_gib(memory)} needed ({basis}), {_gib(machine.memory_available)} "
            f"available"
        )
    if cpu > machine.cpus:  # slower, not broken: a warning, unlike memory
        fit.warnings.append(
            f"{cpu:g} CPUs requested (resources.requests.cpu), {machine.cpus} here: they share"
        )
    per_cpu = f"{processes} processes on {machine.cpus} CPU(s)"
    if processes > PROCESSES_PER_CPU_LIMIT * machine.cpus:
        fit.problems.append(
            f"{per_cpu}, more than {PROCESSES_PER_CPU_LIMIT} per CPU (TensorFlow processes "
            f"starting together that slowly miss their start-up deadlines)"
        )
    elif processes > PROCESSES_PER_CPU_WARN * machine.cpus:
        fit.warnings.append(
            f"{per_cpu}, more than {PROCESSES_PER_CPU_WARN} per CPU: expect a slow start"
        )
    return fit
