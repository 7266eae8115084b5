"""MNIST classifier on TaaS: a two-layer network, async or sync, one PS or more.

Data: ``--data_dir`` / ``MNIST_DATA_DIR`` holding the MNIST IDX or TFRecord files (see
``data.py``); without it, scikit-learn's 8x8 digits. On the digits a 1 PS + 2 worker run of
300 global steps reaches a test accuracy above 0.90 (the tests check that threshold) in a few
seconds of training. The chief prints ``test accuracy: <value>`` and, with ``--export_dir`` /
``MNIST_EXPORT_DIR``, writes a SavedModel (input ``images``, outputs ``logits``, ``classes``).

    python examples/mnist/mnist.py --max_steps=300                  # one process
    taas run examples/mnist/async.yaml                              # 1 PS + 2 workers, async
    taas run examples/mnist/sync.yaml                               # same, sync updates
"""

from __future__ import annotations

import os
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import data

import taas

v1 = tf.compat.v1
flags = v1.app.flags
flags.DEFINE_string("data_dir", os.environ.get("MNIST_DATA_DIR", ""), "MNIST IDX/TFRecord dir")
flags.DEFINE_string("export_dir", os.environ.get("MNIST_EXPORT_DIR", ""), "SavedModel dir")
flags.DEFINE_integer("hidden_units", 64, "hidden layer width")
FLAGS = flags.FLAGS


def dense(inputs, units, name):
    """A fully connected layer from get_variable (graph mode has no Keras 3 layers)."""
    with v1.variable_scope(name):
        weights = v1.get_variable(
            "weights", [inputs.shape[1], units], initializer=v1.glorot_uniform_initializer()
        )
        bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
    return tf.matmul(inputs, weights) + bias


class Mnist(taas.DistributedTrainer):
    """Placeholders fed from numpy; the base class builds the (sync) train op."""

    def build_model(self, global_step, is_chief, sync, num_replicas):
        self.data = data.load(FLAGS.data_dir)
        self.rng = np.random.default_rng(1000 + self.cluster.task_index)
        pixels = self.data.pixels
        self.images = v1.placeholder(tf.float32, [None, pixels], name="images")
        self.labels = v1.placeholder(tf.int64, [None], name="labels")
        hidden = tf.nn.relu(dense(self.images, FLAGS.hidden_units, "hidden"))
        logits = dense(hidden, 10, "logits")
        loss = v1.losses.sparse_softmax_cross_entropy(self.labels, logits)
        classes = tf.argmax(logits, 1, name="classes")
        self.accuracy = tf.reduce_mean(tf.cast(tf.equal(classes, self.labels), tf.float32))
        if FLAGS.export_dir:
            self.init_model_exporter(
                FLAGS.export_dir, {"images": self.images}, {"logits": logits, "classes": classes}
            )
        return loss, v1.train.AdamOptimizer(self.settings.learning_rate)

    def train(self, session, global_step, is_chief):
        batch = self.rng.integers(0, len(self.data.train_labels), self.settings.batch_size)
        feed = {
            self.images: self.data.train_images[batch],
            self.labels: self.data.train_labels[batch],
        }
        self.train_step(session, feed)
        return False

    def after_train(self, session, is_chief):
        if not is_chief:
            return
        accuracy = session.run(
            self.accuracy,
            {self.images: self.data.test_images, self.labels: self.data.test_labels},
        )
        print(f"[{self.cluster.task_name}] test accuracy: {accuracy:.4f}", flush=True)
        if FLAGS.export_dir:
            print(f"[{self.cluster.task_name}] exported {self.export_model(session)}", flush=True)


if __name__ == "__main__":
    Mnist.main()
