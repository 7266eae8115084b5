"""Test program: the linear-regression example, paced and instrumented for fault tests.

``TEST_STEP_SLEEP`` seconds of sleep per step keep the run long enough to kill a task mid-way
(pacing, not a timing assertion). After training every task prints where each variable lives
(``placement <name> <device>``) so the tests can check round-robin over the PS tasks.
"""

from __future__ import annotations

import os
import sys
import time

import tensorflow as tf

sys.path.insert(
    0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "linear_regression")
)
from linear_regression import LinearRegression

SLEEP = float(os.environ.get("TEST_STEP_SLEEP", "0"))


class PacedRegression(LinearRegression):
    """LinearRegression plus pacing and a placement report."""

    def build_model(self, global_step, is_chief, sync, num_replicas):
        result = super().build_model(global_step, is_chief, sync, num_replicas)
        self.extra = [
            tf.compat.v1.get_variable(
                f"extra_{i}", [3], initializer=tf.compat.v1.ones_initializer()
            )
            for i in range(4)
        ]
        return result

    def train(self, session, global_step, is_chief):
        if SLEEP:
            time.sleep(SLEEP)
        return super().train(session, global_step, is_chief)

    def after_train(self, session, is_chief):
        super().after_train(session, is_chief)
        for var in tf.compat.v1.global_variables():
            print(f"placement {var.op.name} {var.device}", flush=True)


if __name__ == "__main__":
    PacedRegression.main()
