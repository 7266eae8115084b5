# Ported from Caicloud TaaS's MNIST example (Copyright 2017 Caicloud authors, Apache License 2.0).
# ruff: noqa: UP031  (ported code keeps its original %-formatting)
"""The original Caicloud TaaS MNIST subclass, running on TaaS.

The class below keeps the original's shape line for line: ``build_model`` builds the graph and
its own train op and returns the optimizer (wrapping it in a SyncReplicasOptimizer itself in sync
mode), ``get_init_fn`` warm-starts, ``train`` runs one step, ``after_train`` evaluates and
exports. What changed, and only because TensorFlow 1 APIs are gone:

- ``import tensorflow.compat.v1 as tf`` instead of ``import tensorflow as tf``;
- ``from taas import dist_base`` / ``from taas import entry`` instead of
  ``caicloud.clever.tensorflow``;
- ``input_data.read_data_sets`` instead of ``tensorflow.contrib``'s (same object shape; digits
  when no MNIST files are in ``--work_dir``);
- ``SyncReplicasOptimizer`` for the removed ``SyncReplicasOptimizerV2``, and keyword arguments to
  ``softmax_cross_entropy_with_logits`` (TF 2 refuses positional ones);
- Adagrad learning rate 0.1 (was 0.01) so a few hundred steps reach > 0.9 on the digits, and the
  old export dir is deleted by the chief only (local workers share one file system).

    python examples/caicloud_mnist/mnist.py --max_steps=300
    taas run examples/caicloud_mnist/tfjob.yaml
"""

import os
import shutil
import sys
import time

import tensorflow.compat.v1 as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from input_data import read_data_sets

from taas import dist_base

tf.app.flags.DEFINE_string("work_dir", "/tmp/mnist-data", "Working directory.")
tf.app.flags.DEFINE_string("export_dir", "/tmp/saved_model/mnist", "Model export directory")

FLAGS = tf.app.flags.FLAGS


class Mnist(dist_base.CaicloudDistTensorflowBase):
    def _inference(self, images):
        w = tf.Variable(tf.zeros([784, 10]), name="weights")
        tf.summary.histogram("weights", w)
        b = tf.Variable(tf.zeros([10]), name="bias")
        tf.summary.histogram("bias", b)
        logits = tf.matmul(images, w) + b
        return logits

    def _create_optimizer(self, sync, num_replicas):
        optimizer = tf.train.AdagradOptimizer(0.1)
        if sync:
            num_workers = num_replicas
            optimizer = tf.train.SyncReplicasOptimizer(
                optimizer,
                replicas_to_aggregate=num_workers,
                total_num_replicas=num_workers,
                name="mnist_sync_replicas",
            )
        return optimizer

    def build_model(self, global_step, is_chief, sync, num_replicas):
        """Build the TensorFlow model."""
        self._step = 0

        print("Reading mnist data...")
        mnist_data = read_data_sets(FLAGS.work_dir, one_hot=True)
        self._mnist = mnist_data

        print("Building model...")
        input_images = tf.placeholder(tf.float32, [None, 784], name="images")
        self._input_images = input_images
        logits = self._inference(input_images)

        labels = tf.placeholder(tf.float32, [None, 10], name="labels")
        self._labels = labels
        cross_entropy = tf.reduce_mean(
            tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        self._loss = tf.reduce_mean(cross_entropy, name="xentropy_mean")

        optimizer = self._create_optimizer(sync, num_replicas)
        train_op = optimizer.minimize(cross_entropy, global_step=global_step)
        self._train_op = train_op

        correct_prediction = tf.equal(tf.argmax(logits, 1), tf.argmax(labels, 1))
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
        self._accuracy = accuracy

        # Initialise the model exporter with the model's input and output tensors.
        self._export_dir = FLAGS.export_dir
        print(f"Initialize model exporter, export path:{self._export_dir}")
        if is_chief and os.path.exists(self._export_dir):
            print("The export path has existed, try to delete it...")
            shutil.rmtree(self._export_dir)
            print("The export path has been deleted.")
        self.init_model_exporter(self._export_dir, {"image": input_images}, {"logits": logits})

        return optimizer

    def get_init_fn(self, checkpoint_path):
        """Warm-start from a checkpoint."""
        if not tf.gfile.Exists(checkpoint_path):
            print(f"WARNING: checkpoint path {checkpoint_path} not exists.")
            return None

        if tf.gfile.IsDirectory(checkpoint_path):
            checkpoint_path = tf.train.latest_checkpoint(checkpoint_path)
        print(f"warm-start from checkpoint {checkpoint_path}")

        saver = tf.train.Saver(tf.trainable_variables())

        def InitAssignFn(sess):
            saver.restore(sess, checkpoint_path)

        return InitAssignFn

    def train(self, session, global_step, is_chief):
        """One training step."""
        start_time = time.time()
        self._step += 1
        batch_xs, batch_ys = self._mnist.train.next_batch(100)
        feed_dict = {self._input_images: batch_xs, self._labels: batch_ys}
        _, loss_value, np_global_step = session.run(
            [self._train_op, self._loss, global_step], feed_dict=feed_dict
        )
        duration = time.time() - start_time
        if self._step % 50 == 0:
            print(
                "Step %d: loss = %.2f (%.3f sec), global step: %d."
                % (self._step, loss_value, duration, np_global_step)
            )
        if self._step % 1000 == 0:
            print(
                "\tValidation Data: %.3f"
                % session.run(
                    self._accuracy,
                    feed_dict={
                        self._input_images: self._mnist.validation.images,
                        self._labels: self._mnist.validation.labels,
                    },
                )
            )
        return False

    def after_train(self, session, is_chief):
        """After training: test accuracy and export."""
        print("Train done.")
        print(
            "Accuracy for Test Data: %.3f"
            % session.run(
                self._accuracy,
                feed_dict={
                    self._input_images: self._mnist.test.images,
                    self._labels: self._mnist.test.labels,
                },
            )
        )

        print(f"Exporting model at {self._export_dir}")
        self.export_model(session)
        print("Export model successfully.")


if __name__ == "__main__":
    from taas import entry as caicloud_entry

    caicloud_entry.start(Mnist)
