"""Test program: a ``taas.KerasTrainer`` that uses ``fit`` as Keras users do: a compiled metric
(``mae``), a validation dataset, the user's own callbacks, epochs. The model is ``y = 2x + 5``
(one Dense unit, mean squared error, SGD): it converges to a loss of ~0 within a few hundred
steps, while Keras's running mean of the loss since the epoch began stays far above it.

Environment:
- ``FIT_KERAS``: ``tf_keras`` (default) or ``keras3`` (``import keras``, Keras 3);
- ``FIT_EARLY_STOP``: set: an ``EarlyStopping`` on ``val_loss`` that stops after two epochs
  (``min_delta`` larger than any improvement); ``best``: with ``restore_best_weights`` (the
  first epoch's weights, the only improvement);
- ``FIT_VALIDATION``: ``0`` turns the validation dataset off (default on);
- ``FIT_BATCH_CALLBACK``: ``0``: the recording callback has no batch-level hook (what
  ParameterServerStrategy allows);
- ``FIT_EXPORT_DIR``: the chief exports a SavedModel there at ``after_train``;
- ``FIT_STEPS_PER_EXECUTION``: compiled with this ``steps_per_execution`` (refused above 1).

A recording callback prints ``CB <event> <json>`` lines: at each batch end the step TaaS's loop
last reported (``taas.core.publish.SCALARS.step``), the optimizer's step and Keras's own
``logs["loss"]`` (the running mean); at each epoch end the logs' names and the weights.
``DONE <json>`` at ``after_train``.
"""

from __future__ import annotations

import json
import os

import numpy as np
import tensorflow as tf

import taas
from taas.core.publish import SCALARS

if os.environ.get("FIT_KERAS", "tf_keras") == "keras3":
    import keras
else:
    import tf_keras as keras

EARLY_STOP = bool(os.environ.get("FIT_EARLY_STOP"))
VALIDATION = os.environ.get("FIT_VALIDATION", "1") != "0"
BATCH_CALLBACK = os.environ.get("FIT_BATCH_CALLBACK", "1") != "0"
EXPORT_DIR = os.environ.get("FIT_EXPORT_DIR")
STEPS_PER_EXECUTION = int(os.environ.get("FIT_STEPS_PER_EXECUTION", "1"))


def line(kind: str, **details: object) -> None:
    print(f"{kind} {json.dumps(details)}", flush=True)


class Recording(keras.callbacks.Callback):
    """The user's callback: what it sees when Keras calls it."""

    def on_epoch_end(self, epoch, logs=None):
        kernel, bias = self.model.layers[-1].get_weights()
        line(
            "CB",
            event="epoch_end",
            epoch=epoch,
            names=sorted(logs),
            w=float(kernel[0][0]),
            b=float(bias[0]),
        )


class RecordingBatches(Recording):
    """...and at each batch's end."""

    def on_train_batch_end(self, batch, logs=None):
        line(
            "CB",
            event="batch_end",
            taas_step=SCALARS.step,
            optimizer_step=int(self.model.optimizer.iterations.numpy()),
            keras_loss=float(logs["loss"]),
        )


class Fit(taas.KerasTrainer):
    """y = 2x + 5 with fit, a metric, validation and callbacks."""

    def build_model(self):
        model = keras.Sequential([keras.layers.Input((1,)), keras.layers.Dense(1)])
        model.compile(
            optimizer=keras.optimizers.SGD(self.settings.learning_rate),
            loss="mse",
            metrics=["mae"],
            steps_per_execution=STEPS_PER_EXECUTION,
        )
        return model

    def _data(self, input_context, seed: int):
        rng = np.random.default_rng(seed + input_context.input_pipeline_id)
        xs = rng.uniform(-1, 1, (4096, 1)).astype(np.float32)
        batch = input_context.get_per_replica_batch_size(self.global_batch_size)
        dataset = tf.data.Dataset.from_tensor_slices((xs, 2 * xs + 5))
        return dataset.repeat().batch(batch)

    def create_dataset(self, input_context):
        return self._data(input_context, 0)

    if VALIDATION:

        def create_validation_dataset(self, input_context):
            return self._data(input_context, 100)

    def callbacks(self):
        callbacks = [RecordingBatches() if BATCH_CALLBACK else Recording()]
        if EARLY_STOP:
            callbacks.append(
                keras.callbacks.EarlyStopping(
                    monitor="val_loss",
                    min_delta=1e6,
                    patience=1,
                    restore_best_weights=os.environ["FIT_EARLY_STOP"] == "best",
                )
            )
        return callbacks

    def after_train(self, model, is_chief):
        kernel, bias = model.layers[-1].get_weights()
        line(
            "DONE",
            is_chief=is_chief,
            step=int(self.optimizer.iterations.numpy()),
            w=float(kernel[0][0]),
            b=float(bias[0]),
        )
        if EXPORT_DIR and is_chief:
            line("EXPORTED", path=self.export_model(model, EXPORT_DIR))


if __name__ == "__main__":
    Fit.main()
