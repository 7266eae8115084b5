"""Test program: the numbers ``fit`` reports, under TaaS or as plain single-process Keras.

A binary logistic model (4 inputs, one sigmoid unit, binary cross-entropy, SGD) compiled with
``accuracy`` and ``AUC``, on 96 seeded examples (``logistic_data``). Each pipeline shards the
examples by ``input_pipeline_id`` before batching its replicas' batches, so the global batch of
step k is examples ``[k*G, (k+1)*G)`` (G the global batch) in every synchronous strategy, the
batch a single process reading them in order with batch G gets.

Environment:
- ``METRICS_PLAIN``: set: no TaaS: plain ``model.fit`` in one process, global batch
  ``METRICS_PLAIN`` (the reference);
- ``METRICS_KERAS``: ``tf_keras`` (default) or ``keras3`` (``import keras``, Keras 3);
- ``METRICS_LR``: SGD's learning rate (default 0.5); ``METRICS_INIT``: ``zeros`` or
  ``seeded`` (the kernel, from a seeded numpy generator: the same in both Kerases; default
  seeded); ``METRICS_SAME_BATCH``: set: every batch holds the same examples (a run whose
  numbers do not depend on which worker took which step);
- ``METRICS_EPOCHS``, ``METRICS_STEPS``: plain fit's epochs and steps per epoch (TaaS: its
  settings).

A callback prints ``CB batch {logs}`` at each batch's end and ``CB epoch {logs}`` at each
epoch's end (its logs, ``History``'s values); ``DONE {weights}`` at the end.
"""

from __future__ import annotations

import json
import os

import numpy as np
import tensorflow as tf
from logistic_data import examples as seeded

if os.environ.get("METRICS_KERAS", "tf_keras") == "keras3":
    import keras
else:
    import tf_keras as keras

PLAIN = int(os.environ.get("METRICS_PLAIN", "0"))
LR = float(os.environ.get("METRICS_LR", "0.5"))
ZEROS = os.environ.get("METRICS_INIT", "seeded") == "zeros"
SAME_BATCH = bool(os.environ.get("METRICS_SAME_BATCH"))

X, Y = seeded()


def line(kind: str, **details: object) -> None:
    print(f"{kind} {json.dumps(details)}", flush=True)


class Recording(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        line("CB", event="batch", logs={k: float(v) for k, v in (logs or {}).items()})

    def on_epoch_end(self, epoch, logs=None):
        line("CB", event="epoch", epoch=epoch, logs={k: float(v) for k, v in logs.items()})


class EpochsOnly(keras.callbacks.Callback):
    """What ParameterServerStrategy allows: epoch-level hooks only."""

    def on_epoch_end(self, epoch, logs=None):
        line("CB", event="epoch", epoch=epoch, logs={k: float(v) for k, v in logs.items()})


def build() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input((4,)),
            keras.layers.Dense(1, activation="sigmoid", kernel_initializer="zeros"),
        ]
    )
    if not ZEROS:
        kernel = np.random.default_rng(3).uniform(-1, 1, (4, 1)).astype(np.float32)
        model.layers[-1].set_weights([kernel, np.zeros(1, np.float32)])
    model.compile(
        optimizer=keras.optimizers.SGD(LR),
        loss="binary_crossentropy",
        metrics=["accuracy", keras.metrics.AUC(name="auc")],
    )
    return model


def examples(pipelines: int, pipeline: int, batch: int) -> tf.data.Dataset:
    if SAME_BATCH:
        return tf.data.Dataset.from_tensor_slices((X[:batch], Y[:batch])).repeat().batch(batch)
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).repeat()
    return dataset.shard(pipelines, pipeline).batch(batch)


def weights(model: keras.Model) -> dict[str, list[float]]:
    kernel, bias = model.layers[-1].get_weights()
    return {"kernel": [float(v) for v in kernel[:, 0]], "bias": [float(bias[0])]}


def plain() -> None:
    model = build()
    history = model.fit(
        examples(1, 0, PLAIN),
        epochs=int(os.environ.get("METRICS_EPOCHS", "1")),
        steps_per_epoch=int(os.environ["METRICS_STEPS"]),
        verbose=0,
        callbacks=[Recording()],
    )
    line("HISTORY", **history.history)
    line("DONE", **weights(model))


if PLAIN:
    plain()
else:
    import taas

    class Metrics(taas.KerasTrainer):
        def build_model(self):
            return build()

        def create_dataset(self, input_context):
            batch = input_context.get_per_replica_batch_size(self.global_batch_size)
            pipelines, pipeline = input_context.num_input_pipelines, input_context.input_pipeline_id
            return examples(pipelines, pipeline, batch)

        def callbacks(self):
            coordinated = self.cluster.distributed and "ps" in os.environ.get("TF_CONFIG", "")
            return [EpochsOnly() if coordinated else Recording()]

        def after_train(self, model, is_chief):
            line("DONE", is_chief=is_chief, **weights(model))

    Metrics.main()
