"""Digits classifier with TensorFlow 2 on TaaS: one program for every job shape.

A ``taas.KerasTrainer``: ``build_model`` returns a compiled ``tf_keras`` model, ``train`` is not
overridden, so the base class runs ``model.fit`` under the strategy the job's shape picks:

    python examples/keras_digits/keras_digits.py --max_steps=300      # one process
    taas run examples/keras_digits/mwms.yaml     # 2 workers: MultiWorkerMirroredStrategy
    taas run examples/keras_digits/pss.yaml      # chief + 2 workers + PS: ParameterServerStrategy

Data: ``MNIST_DATA_DIR`` with the MNIST IDX or TFRecord files (``examples/mnist/data.py``), else
scikit-learn's 8x8 digits (shipped with the package). The chief prints ``test accuracy: <value>``
(above 0.9 after 300 steps on the digits); an evaluator replica prints and writes the accuracy
of every checkpoint; ``MNIST_EXPORT_DIR`` makes the chief write a SavedModel.

TensorFlow and Keras are imported in the hooks, not at the top: the PS and worker tasks of a
ParameterServerStrategy job never run the hooks (the chief sends them functions), and a program
that has not imported TensorFlow lets them serve without its Python API, which starts them in a
third of the CPU time of ``import tensorflow`` (``taas.runtime.lean_server``). Importing it at
the top works the same, with a slower start where replicas share few cores.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mnist"))

import data

import taas


class Digits(taas.KerasTrainer):
    """A 64-unit perceptron; fit by default."""

    def build_model(self):
        import tf_keras as keras  # in the hooks: see the module's last paragraph

        self.data = data.load(os.environ.get("MNIST_DATA_DIR"))
        model = keras.Sequential(
            [
                keras.layers.Input((self.data.pixels,)),
                keras.layers.Dense(64, activation="relu"),
                keras.layers.Dense(10),
            ]
        )
        model.compile(
            optimizer=keras.optimizers.Adam(self.settings.learning_rate),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],  # in progress lines, status.progress.scalars, TensorBoard
        )
        return model

    def create_dataset(self, input_context):
        import tensorflow as tf

        images, labels = self.data.train_images, self.data.train_labels
        dataset = tf.data.Dataset.from_tensor_slices((images, labels))
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        batch = input_context.get_per_replica_batch_size(self.global_batch_size)
        return (
            dataset.shuffle(len(labels), seed=input_context.input_pipeline_id).repeat().batch(batch)
        )

    def accuracy(self, model) -> float:
        logits = model(self.data.test_images, training=False)
        return float(np.mean(np.argmax(logits, axis=1) == self.data.test_labels))

    def after_train(self, model, is_chief):
        accuracy = self.accuracy(model)
        if not is_chief:
            return
        print(f"[{self.cluster.task_name}] test accuracy: {accuracy:.4f}", flush=True)
        export_dir = os.environ.get("MNIST_EXPORT_DIR")
        if export_dir:
            print(f"[{self.cluster.task_name}] exported {self.export_model(model, export_dir)}")

    def evaluate(self, model, global_step):
        return {"accuracy": self.accuracy(model)}


if __name__ == "__main__":
    Digits.main()
