"""Graph mode: what ``train_step`` runs the train op through, recording each step.

The graph engine sets ``trainer._taas_steps`` to a :class:`StepRunner` once the graph is built;
``GraphHooks.train_step`` calls it, and the engine takes the recorded
:class:`~taas.core.engine.StepResult` after each ``train`` call (``taas.core.loop`` turns it
into progress lines and the non-finite loss check).
"""

from __future__ import annotations

from typing import Any

from taas.core.engine import StepLog, StepResult


class StepRunner:
    """Runs the train op for ``train_step`` and records each step in the engine's log."""

    def __init__(self, step_after: Any, log: StepLog) -> None:
        self.step_after = step_after
        self.log = log

    def run(
        self, session: Any, train_op: Any, loss: Any, feed_dict: Any, examples: int | None
    ) -> float:
        """One ``session.run`` of the train op; return the loss."""
        fetches = [train_op, loss] if self.step_after is None else [train_op, loss, self.step_after]
        values = session.run(fetches, feed_dict=feed_dict)
        step = int(values[2]) if self.step_after is not None else None
        self.log.record(StepResult(step, float(values[1]), examples))
        return float(values[1])
