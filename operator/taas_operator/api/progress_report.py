"""The document a job's chief publishes about its training (TaaS), as the operator reads it.

    ProgressReport.model_validate_json(text) -> ProgressReport   # what GET /progress returns

Written by the trainer library (`taas.core.publish`, which never imports this package: the two sides
agree on this JSON only, and a test sends one through the other). camelCase, one object:

    {"version": 1, "task": "worker:0", "time": 1764000000.5, "globalStep": 410,
     "maxSteps": 1000, "loss": 0.3124, "examplesPerSecond": 2450.1, "etaSeconds": 24.0,
     "scalars": {"accuracy": [{"step": 400, "value": 0.91}, {"step": 410, "value": 0.92}]}}

`time` is the chief's clock (Unix seconds) when it made the document. Fields a newer trainer
adds are ignored; a value that is not finite (NaN, infinity: JSON has neither, but Python's
json writes them) reads as absent. Bounds are enforced where the status is written
(`planner.progress`), not here, so an odd report is trimmed rather than refused.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from taas_operator.api.models import ScalarPoint


class ProgressReport(BaseModel):
    """One progress document of a chief."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    version: int = 1
    task: str = ""
    time: float
    global_step: int = Field(ge=0)
    max_steps: int = Field(ge=1)
    loss: float | None = None
    examples_per_second: float | None = None
    eta_seconds: float | None = None
    scalars: dict[str, list[ScalarPoint]] = Field(default_factory=dict)

    @field_validator("loss", "examples_per_second", "eta_seconds", mode="before")
    @classmethod
    def _finite_or_absent(cls, value: Any) -> Any:
        if isinstance(value, float | int) and not math.isfinite(value):
            return None
        return value

    @field_validator("scalars", mode="before")
    @classmethod
    def _finite_points(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return {
            name: [
                p
                for p in points
                if not (isinstance(p, dict) and isinstance(p.get("value"), float))
                or math.isfinite(p["value"])
            ]
            for name, points in value.items()
            if isinstance(points, list)
        }
