"""Test program: the linear-regression example with TensorFlow imported in its hooks, not at the
top, so that its PS tasks serve without TensorFlow's Python API (`taas.runtime.lean_server`).
`TEST_STEP_SLEEP` seconds per step keep it training while a test stops a task (pacing only)."""

from __future__ import annotations

import os
import sys
import time

import numpy as np

import taas

SLEEP = float(os.environ.get("TEST_STEP_SLEEP", "0"))


class LazyRegression(taas.DistributedTrainer):
    """y = w*x + b with a squared loss; TensorFlow only where the graph is built."""

    def build_model(self, global_step, is_chief, sync, num_replicas):
        import tensorflow as tf

        v1 = tf.compat.v1
        self.x = v1.placeholder(tf.float32, [None], name="x")
        self.y = v1.placeholder(tf.float32, [None], name="y")
        self.w = v1.get_variable("w", [], initializer=v1.zeros_initializer())
        self.b = v1.get_variable("b", [], initializer=v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(self.w * self.x + self.b - self.y))
        return loss, v1.train.GradientDescentOptimizer(self.settings.learning_rate)

    def train(self, session, global_step, is_chief):
        if SLEEP:
            time.sleep(SLEEP)
        xs = np.random.uniform(-1, 1, self.settings.batch_size).astype(np.float32)
        self.train_step(session, {self.x: xs, self.y: 2 * xs + 1})
        return False

    def after_train(self, session, is_chief):
        w, b = session.run([self.w, self.b])
        print(f"[{self.cluster.task_name}] learned w={w:.3f} b={b:.3f}", flush=True)
        print(f"[{self.cluster.task_name}] tensorflow imported: {'tensorflow' in sys.modules}")


if __name__ == "__main__":
    LazyRegression.main()
