"""The pod annotations the simulated kubelets (kwok, stages.yaml) act on, and a helper to set
them on a TFJob's replica template.

    EXIT_CODE / RUN_SECONDS / START_SECONDS / REASON        # annotation keys
    container_plan(exit_code=None, run_seconds=0, start_seconds=0, reason=None) -> dict[str, str]

A pod without EXIT_CODE runs until it is deleted; with it, its container exits with that code
RUN_SECONDS after it started, and the restartPolicy decides what follows (stages.yaml).
"""

from __future__ import annotations

EXIT_CODE = "sim.taas.dev/exit-code"
RUN_SECONDS = "sim.taas.dev/run-seconds"
START_SECONDS = "sim.taas.dev/start-seconds"
REASON = "sim.taas.dev/reason"


def container_plan(
    exit_code: int | None = None,
    run_seconds: float = 0,
    start_seconds: float = 0,
    reason: str | None = None,
) -> dict[str, str]:
    """The annotations for a fake container; refuses values the stages would ignore."""
    if exit_code is not None and not 0 <= exit_code <= 255:
        raise ValueError(f"exit_code must be 0..255, got {exit_code}")
    if run_seconds < 0 or start_seconds < 0:
        raise ValueError("run_seconds and start_seconds must be >= 0")
    found: dict[str, str] = {}
    if exit_code is not None:
        found[EXIT_CODE] = str(exit_code)
    if run_seconds:
        found[RUN_SECONDS] = f"{float(run_seconds):.3f}"
    if start_seconds:
        found[START_SECONDS] = f"{float(start_seconds):.3f}"
    if reason:
        found[REASON] = reason
    return found
