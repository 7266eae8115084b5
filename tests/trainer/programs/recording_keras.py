"""Test program: a ``taas.KerasTrainer`` that records every hook as it fires, one ``HOOK`` line
each (``HOOK <task> <hook> <json details>``, flushed), like ``recording_trainer.py`` for graph
mode. The model is ``y = 2x + 1``: one tf_keras Dense unit, mean squared error, SGD.

Environment:
- ``RECORD_STEP``: ``fit`` (default: ``train_batch`` not overridden, the base class runs fit),
  ``custom`` (``train_batch(batch)`` overridden: a GradientTape step; Python runs it only while
  tracing, so it records ``train_batch`` once per trace, with the replica context it saw) or
  ``legacy`` (the same step under its earlier name, ``train(batch)``);
- ``RECORD_NAN_FROM``: labels turn NaN after this many examples (the non-finite loss test);
- ``RECORD_FIT_HOOKS``: set: also override ``callbacks`` and ``create_validation_dataset``
  (hooks only ``fit`` calls: refused beside a custom step).

It also defines methods named like the engine's (``run``, ``_train``, ``_build``, ...); each
prints ``TRAP <name>`` and raises: the engine is a separate object and must never call them.
"""

from __future__ import annotations

import json
import os

import numpy as np
import tensorflow as tf
import tf_keras as keras

import taas

STEP = os.environ.get("RECORD_STEP", "fit")
NAN_FROM = int(os.environ.get("RECORD_NAN_FROM", "0"))
FIT_HOOKS = bool(os.environ.get("RECORD_FIT_HOOKS"))


class Recording(taas.KerasTrainer):
    """Records each hook; learns y = 2x + 1."""

    def record(self, hook: str, **details: object) -> None:
        print(f"HOOK {self.cluster.task_name} {hook} {json.dumps(details)}", flush=True)

    def weights(self, model) -> tuple[float, float]:
        kernel, bias = model.layers[-1].get_weights()
        return round(float(kernel[0][0]), 6), round(float(bias[0]), 6)

    # ------------------------------------------------------------------ hooks

    def build_model(self):
        self.record(
            "build_model",
            strategy=type(self.strategy).__name__,
            replicas=self.strategy.num_replicas_in_sync,
            global_batch_size=self.global_batch_size,
            max_steps=self.settings.max_steps,
        )
        model = keras.Sequential([keras.layers.Input((1,)), keras.layers.Dense(1)])
        optimizer = keras.optimizers.SGD(self.settings.learning_rate)
        return model, keras.losses.MeanSquaredError(), optimizer

    def create_dataset(self, input_context):
        self.record(
            "create_dataset",
            pipeline=input_context.input_pipeline_id,
            pipelines=input_context.num_input_pipelines,
        )
        rng = np.random.default_rng(input_context.input_pipeline_id)
        xs = rng.uniform(-1, 1, (4096, 1)).astype(np.float32)
        ys = 2 * xs + 1
        if NAN_FROM:
            ys[NAN_FROM:] = np.nan
        batch = input_context.get_per_replica_batch_size(self.global_batch_size)
        dataset = tf.data.Dataset.from_tensor_slices((xs, ys))
        return dataset.repeat().batch(batch)

    def get_init_fn(self, checkpoint_path):
        self.record("get_init_fn", checkpoint_path=checkpoint_path)

        def init_fn(model):
            source = tf.train.latest_checkpoint(checkpoint_path) or checkpoint_path
            tf.train.Checkpoint(model=model).restore(source).expect_partial()
            self.record("init_fn", w=self.weights(model)[0])

        return init_fn

    if STEP in ("custom", "legacy"):

        def train_batch(self, batch):
            context = tf.distribute.get_replica_context()
            self.record("train_batch", in_replica=context is not None)
            xs, ys = batch
            with tf.GradientTape() as tape:
                per_example = tf.reshape(tf.square(self.model(xs, training=True) - ys), [-1])
                loss = self.average_loss(per_example)
            variables = self.model.trainable_variables
            self.optimizer.apply_gradients(
                zip(tape.gradient(loss, variables), variables, strict=True)
            )
            return loss

        if STEP == "legacy":  # the old name only: the base class must find it by that name
            train = train_batch
            del train_batch

    if FIT_HOOKS:

        def callbacks(self):
            self.record("callbacks")
            return []

        def create_validation_dataset(self, input_context):
            self.record("create_validation_dataset")
            return self.create_dataset(input_context)

    def after_train(self, model, is_chief):
        w, b = self.weights(model)
        self.record(
            "after_train",
            is_chief=is_chief,
            w=w,
            b=b,
            step=int(self.optimizer.iterations.numpy()),
            attributes_set=all(
                getattr(self, name) is not None
                for name in ("model", "loss", "optimizer", "strategy")
            ),
        )

    def evaluate(self, model, global_step):
        w, _ = self.weights(model)
        self.record("evaluate", step=int(global_step), w=w)
        return {"w": w}

    # ------------------------------------------------- names the engine uses for itself

    def _trap(self, name: str) -> None:
        print(f"TRAP {name}", flush=True)
        raise RuntimeError(f"the engine called the user's {name}()")

    def run(self, *args, **kwargs):
        self._trap("run")

    def _train(self, *args, **kwargs):
        self._trap("_train")

    def _build(self, *args, **kwargs):
        self._trap("_build")

    def _strategy(self, *args, **kwargs):
        self._trap("_strategy")

    def _serve(self, *args, **kwargs):
        self._trap("_serve")

    def _signal_done(self, *args, **kwargs):
        self._trap("_signal_done")


if __name__ == "__main__":
    Recording.main()
