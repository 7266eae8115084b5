"""Fit ``y = 2x + 1`` at the learning rate Katib chose: the program of ``experiment.yaml``.

A parameter-server job (1 PS + 1 worker) of ``TF_MAX_STEPS`` steps at ``TAAS_LEARNING_RATE``.
When training ends the chief prints ``loss=<mean squared error on held-out points>``: Katib's
StdOut metrics collector reads ``name=value`` lines from the primary pod's output, and the
Experiment minimizes ``loss``. Run alone:
``TAAS_LEARNING_RATE=0.1 python examples/hyperparameter_search/fit_line.py``.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

import taas

v1 = tf.compat.v1


class FitLine(taas.DistributedTrainer):
    """y = w*x + b with a squared loss; the base class builds the train op."""

    def build_model(self, global_step, is_chief, sync, num_replicas):
        self.rng = np.random.default_rng(self.cluster.task_index + 1)
        self.x = v1.placeholder(tf.float32, [None], name="x")
        self.y = v1.placeholder(tf.float32, [None], name="y")
        self.w = v1.get_variable("w", [], initializer=v1.zeros_initializer())
        self.b = v1.get_variable("b", [], initializer=v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(self.w * self.x + self.b - self.y))
        return loss, v1.train.GradientDescentOptimizer(self.settings.learning_rate)

    def train(self, session, global_step, is_chief):
        xs = self.rng.uniform(-1, 1, self.settings.batch_size).astype(np.float32)
        ys = 2 * xs + 1 + self.rng.normal(0, 0.05, xs.shape).astype(np.float32)
        self.train_step(session, {self.x: xs, self.y: ys})
        return False

    def after_train(self, session, is_chief):
        if not is_chief:
            return
        w, b = session.run([self.w, self.b])
        xs = np.linspace(-1, 1, 101)
        loss = float(np.mean((w * xs + b - (2 * xs + 1)) ** 2))
        print(f"learning rate {self.settings.learning_rate}: w={w:.4f} b={b:.4f}", flush=True)
        print(f"loss={loss:.6e}", flush=True)


if __name__ == "__main__":
    FitLine.main()
