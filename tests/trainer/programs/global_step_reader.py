"""Test program: graph-mode linear regression fed through placeholders whose ``train`` reads the
global step after each step and prints ``STEP <train's step> <read>``.

``READ_WITH``: ``helper`` (default: ``self.read_global_step(session)``) or ``session``
(``session.run(global_step)``, which the chief's summary hook makes fail: its loss summary
needs the placeholders fed).
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

import taas

v1 = tf.compat.v1
READ_WITH = os.environ.get("READ_WITH", "helper")


class Reader(taas.DistributedTrainer):
    def build_model(self, global_step, is_chief, sync, num_replicas):
        self.x = v1.placeholder(tf.float32, [None], name="x")
        self.y = v1.placeholder(tf.float32, [None], name="y")
        w = v1.get_variable("w", [], initializer=v1.zeros_initializer())
        return tf.reduce_mean(tf.square(w * self.x - self.y))

    def train(self, session, global_step, is_chief):
        xs = np.linspace(-1, 1, 8).astype(np.float32)
        self.train_step(session, {self.x: xs, self.y: 2 * xs})
        if READ_WITH == "session":
            read = int(session.run(global_step))
        else:
            read = self.read_global_step(session)
        print(f"STEP {read}", flush=True)
        return False


if __name__ == "__main__":
    Reader.main()
