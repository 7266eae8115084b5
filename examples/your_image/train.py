"""Your program in your image: learns y = 3x - 1 (samples.py) on a parameter server.

Built into an image FROM the trainer image by the Containerfile beside it and run as a TFJob
(1 PS + 2 workers, examples/linear_regression/tfjob.yaml with this image and `python train.py`);
alone: `python train.py` in this directory. Prints the learned `w` and `b`.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from samples import TRUE_B, TRUE_W, batch

import taas

v1 = tf.compat.v1


class YourModel(taas.DistributedTrainer):
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
        xs, ys = batch(self.rng, self.settings.batch_size)
        self.train_step(session, {self.x: xs, self.y: ys})
        return False

    def after_train(self, session, is_chief):
        w, b = session.run([self.w, self.b])
        name = self.cluster.task_name
        print(f"[{name}] your model: w={w:.3f} b={b:.3f} (true {TRUE_W}, {TRUE_B})", flush=True)


if __name__ == "__main__":
    YourModel.main()
