"""Test program: the linear-regression example logging a scalar each step (``taas.log_scalar``).

``TEST_STEP_SLEEP`` seconds of sleep per step keep the run long enough to read its progress
while it trains (pacing, not a timing assertion). Each step logs ``half_loss`` (the step's loss
/ 2) through the hook-class method and ``calls`` (train() calls so far) through the module
function, so the published document can be checked against the progress lines.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

import taas

sys.path.insert(
    0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "linear_regression")
)
from linear_regression import LinearRegression

SLEEP = float(os.environ.get("TEST_STEP_SLEEP", "0"))


class ReportingRegression(LinearRegression):
    """LinearRegression that logs two scalars per step."""

    calls = 0

    def train(self, session, global_step, is_chief):
        if SLEEP:
            time.sleep(SLEEP)
        xs = np.random.uniform(-1, 1, self.settings.batch_size).astype(np.float32)
        loss = self.train_step(session, {self.x: xs, self.y: 2 * xs + 1})
        self.calls += 1
        self.log_scalar("half_loss", loss / 2)
        taas.log_scalar("calls", self.calls)
        return False


if __name__ == "__main__":
    ReportingRegression.main()
