"""The TensorFlow 2 model the trainer benchmarks time, hand-written and as a taas.KerasTrainer.

    BENCH_MODE=base-fit     taas.KerasTrainer, train not overridden (the base class runs fit)
    BENCH_MODE=base-custom  taas.KerasTrainer with a custom train(batch) step
    BENCH_MODE=hand-fit     plain model.fit on the default strategy, same data and model
    BENCH_MODE=hand-custom  plain tf.function + strategy.run loop, same step
    BENCH_WARM=20           batches before the meter starts
    BENCH_KERAS=keras3      the same model in Keras 3 (`import keras`; default tf_keras)

A tf_keras (or Keras 3) perceptron (64 -> 512 -> 10) on scikit-learn's digits, Adam, batch
TAAS_BATCH_SIZE (100). Every form is metered per step after the warm-up: fit by a callback
every form gets (the model class adds it to every fit call; the base class's ``callbacks()``
returns it, so TaaS's own loop for Keras 3, which runs no fit, calls it too), custom steps by
the same meter called after each step
(in the base class through a wrapper of ``taas.keras.steps.report``, which it calls once per
finished step, as the graph-mode bench patches ``taas.graph.model``). Each task that runs the
loop prints one line `BENCH {json}`.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits

KERAS3 = os.environ.get("BENCH_KERAS", "tf_keras") == "keras3"
if KERAS3:
    import keras
else:
    import tf_keras as keras

MODE = os.environ.get("BENCH_MODE", "base-fit")
WARM = int(os.environ.get("BENCH_WARM", "20"))
BATCH = int(os.environ.get("TAAS_BATCH_SIZE", "100"))
STEPS = int(os.environ.get("TF_MAX_STEPS", "500"))


def report(task: str, steps: int, seconds: float, examples_per_step: int, **extra) -> None:
    rate = steps / seconds if steps > 0 and seconds > 0 else 0.0
    line = {"task": task, "steps": steps, "seconds": seconds, "steps_per_s": rate}
    line["examples_per_s"] = rate * examples_per_step
    print("BENCH " + json.dumps({**line, **extra}), flush=True)


class Meter(keras.callbacks.Callback):
    """Times the batches after the warm-up."""

    def __init__(self) -> None:
        super().__init__()
        self._supports_tf_logs = True  # allowed under ParameterServerStrategy; logs unused
        self.batches, self.t0, self.last = 0, 0.0, 0.0

    def on_train_batch_end(self, batch, logs=None) -> None:
        self.batches += 1
        now = time.monotonic()
        if self.batches == WARM:
            self.t0 = now
        self.last = now


class StepMeter:
    """The same timing for custom steps: call once per finished step."""

    def __init__(self) -> None:
        self.batches, self.t0, self.last = 0, 0.0, 0.0

    on_train_batch_end = Meter.on_train_batch_end

    def step(self) -> None:
        self.on_train_batch_end(self.batches)


class MeteredModel(keras.Sequential):
    """Adds the meter to every fit call, the base class's and the hand-written one alike."""

    meter: Meter | None = None

    def fit(self, *args, callbacks=None, **kwargs):
        callbacks = list(callbacks or [])
        if self.meter is None or self.meter not in callbacks:
            self.meter = Meter()
            callbacks.append(self.meter)
        return super().fit(*args, callbacks=callbacks, **kwargs)


def data() -> tuple[np.ndarray, np.ndarray]:
    digits = load_digits()
    return (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int64)


def model() -> MeteredModel:
    return MeteredModel(
        [
            keras.layers.Input((64,)),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dense(10),
        ]
    )


LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def dataset(context: tf.distribute.InputContext, global_batch: int) -> tf.data.Dataset:
    xs, ys = data()
    ds = tf.data.Dataset.from_tensor_slices((xs, ys))
    ds = ds.shard(context.num_input_pipelines, context.input_pipeline_id)
    return ds.repeat().batch(context.get_per_replica_batch_size(global_batch))


def fit_report(task: str, net: MeteredModel, examples_per_step: int) -> None:
    meter = net.meter
    assert meter is not None
    report(task, meter.batches - WARM, meter.last - meter.t0, examples_per_step)


def hand(custom: bool) -> None:
    strategy = tf.distribute.get_strategy()
    net = model()
    optimizer = keras.optimizers.Adam(0.01)
    net.compile(optimizer=optimizer, loss=LOSS)
    if not custom:
        if KERAS3:  # Keras 3 has no DatasetCreator: the one pipeline's dataset
            data = dataset(tf.distribute.InputContext(), BATCH)
        else:
            data = keras.utils.experimental.DatasetCreator(lambda c: dataset(c, BATCH))
        net.fit(data, epochs=1, steps_per_epoch=STEPS, verbose=0)
        fit_report("local", net, BATCH)
        return

    @tf.function
    def step(iterator):
        def replica(batch):
            xs, ys = batch
            with tf.GradientTape() as tape:
                per_example = LOSS.__class__(from_logits=True, reduction="none")(ys, net(xs))
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=BATCH)
            grads = tape.gradient(loss, net.trainable_variables)
            optimizer.apply_gradients(zip(grads, net.trainable_variables, strict=True))
            return loss

        losses = strategy.run(replica, args=(next(iterator),))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    meter = StepMeter()
    iterator = iter(strategy.distribute_datasets_from_function(lambda c: dataset(c, BATCH)))
    for _ in range(STEPS):
        float(step(iterator))  # the base class reads each step's loss too
        meter.step()
    report("local", meter.batches - WARM, meter.last - meter.t0, BATCH)


def base(custom: bool):
    import taas
    import taas.keras.steps

    meter = StepMeter()
    if custom:
        original = taas.keras.steps.report

        def metered(*args, **kwargs):
            more = original(*args, **kwargs)
            meter.step()
            return more

        taas.keras.steps.report = metered

    class Bench(taas.KerasTrainer):
        def build_model(self):
            net = model()
            return net, LOSS, keras.optimizers.Adam(self.settings.learning_rate)

        def create_dataset(self, input_context):
            return dataset(input_context, self.global_batch_size)

        if not custom:

            def callbacks(self):
                self.model.meter = Meter()
                return [self.model.meter]

        def after_train(self, model, is_chief):
            per_step = self.settings.batch_size
            timed = meter if custom else model.meter
            report(
                self.cluster.task_name,
                timed.batches - WARM,
                timed.last - timed.t0,
                per_step,
                strategy=type(self.strategy).__name__,
            )

    if custom:

        def train(self, batch):
            xs, ys = batch
            with tf.GradientTape() as tape:
                per_example = LOSS.__class__(from_logits=True, reduction="none")(ys, self.model(xs))
                loss = self.average_loss(per_example)
            variables = self.model.trainable_variables
            grads = tape.gradient(loss, variables)
            self.optimizer.apply_gradients(zip(grads, variables, strict=True))
            return loss

        Bench.train = train  # type: ignore[method-assign]
    return Bench


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    kind, _, form = MODE.partition("-")
    if kind == "hand":
        hand(form == "custom")
    else:
        if "TF_LOGDIR" not in os.environ:  # the benches set it; a run by hand gets its own
            os.environ["TF_LOGDIR"] = tempfile.mkdtemp(prefix="taas-bench-keras-")
        base(form == "custom").main(sys.argv[1:])
