"""Linear regression on a parameter server: the smallest cluster example.

Learns ``y = 2x + 1`` from noisy samples; the weights live on the PS, each worker computes
gradients on its own batches. Run alone (``python examples/linear_regression/linear_regression.py``)
or as the TFJob in ``tfjob.yaml`` (1 PS + 2 workers). Prints the learned ``w`` and ``b``.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

import taas

v1 = tf.compat.v1


class LinearRegression(taas.DistributedTrainer):
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
        w, b = session.run([self.w, self.b])
        print(f"[{self.cluster.task_name}] learned w={w:.3f} b={b:.3f} (true 2, 1)", flush=True)


if __name__ == "__main__":
    LinearRegression.main()
