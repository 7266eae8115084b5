"""Test program: ``y = 2x + 5`` under ``fit`` with what writes files, as docs/trainer.md shows.

Environment:
- ``WRITERS_EXPORT_DIR``: ``export_model(model, dir)`` in ``after_train``, by
  ``WRITERS_EXPORT_BY`` = ``chief`` (default: ``if is_chief``) or ``all``;
- ``WRITERS_CSV``: a ``CSVLogger`` there, from ``callbacks()`` on the chief only;
- ``WRITERS_CHECKPOINT``: a ``ModelCheckpoint`` (weights, each epoch) there, on every worker.

Prints ``WHERE <json>`` from ``callbacks()`` (``self.is_chief``, ``self.task``), ``HISTORY
<json>`` (``model.history.history``'s losses) at ``after_train`` and ``EXPORTED <json>`` when
``export_model`` returns.
"""

from __future__ import annotations

import json
import os

import numpy as np
import tensorflow as tf
import tf_keras as keras

import taas

EXPORT_DIR = os.environ.get("WRITERS_EXPORT_DIR")
EXPORT_BY = os.environ.get("WRITERS_EXPORT_BY", "chief")
CSV = os.environ.get("WRITERS_CSV")
CHECKPOINT = os.environ.get("WRITERS_CHECKPOINT")


class Writers(taas.KerasTrainer):
    def build_model(self):
        model = keras.Sequential([keras.layers.Input((1,)), keras.layers.Dense(1)])
        model.compile(
            optimizer=keras.optimizers.SGD(self.settings.learning_rate),
            loss="mse",
            metrics=["mae"],
        )
        return model

    def create_dataset(self, input_context):
        xs = np.linspace(-1, 1, 256, dtype=np.float32).reshape(-1, 1)
        batch = input_context.get_per_replica_batch_size(self.global_batch_size)
        return tf.data.Dataset.from_tensor_slices((xs, 2 * xs + 5)).repeat().batch(batch)

    def callbacks(self):
        print(f"WHERE {json.dumps({'is_chief': self.is_chief, 'task': self.task})}", flush=True)
        callbacks = [keras.callbacks.CSVLogger(CSV)] if CSV and self.is_chief else []
        if CHECKPOINT:
            callbacks.append(keras.callbacks.ModelCheckpoint(CHECKPOINT, save_weights_only=True))
        return callbacks

    def after_train(self, model, is_chief):
        print(f"HISTORY {json.dumps({'loss': model.history.history['loss']})}", flush=True)
        if EXPORT_DIR and (is_chief or EXPORT_BY == "all"):
            path = self.export_model(model, EXPORT_DIR)
            print(f"EXPORTED {json.dumps({'path': path})}", flush=True)


if __name__ == "__main__":
    Writers.main()
