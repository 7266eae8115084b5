"""The model every trainer benchmark times, in two forms, and the step meter they share.

    BENCH_MODE=base   taas.DistributedTrainer subclass (local, or a cluster from TF_CONFIG)
    BENCH_MODE=hand   a hand-written tf.compat.v1 loop: same graph, same fetches, one process
    BENCH_TOWERS=N    base form only: N towers of a loss_fn, all on GPU:0 (1 vs 2 towers on
                      one GPU; the base class itself puts one tower per GPU)
    BENCH_WARM=20     steps before the meter starts

A two-layer perceptron (64 -> 512 -> 10) on scikit-learn's 8x8 digits, fed from numpy
placeholders, batch TAAS_BATCH_SIZE (100), Adam. Each training task prints one line
`BENCH {json}`: first_step_unix, steps and seconds measured after warm-up, steps/s, examples/s.
TensorFlow and scikit-learn are imported where the model is built, as examples/keras_digits
does: the PS task then serves without TensorFlow's Python API (`taas.runtime.lean_server`);
`python -c "import tensorflow; import runpy; ..."` measures a program that imports it first.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np

tf: Any = None  # TensorFlow and its compat.v1, once _tensorflow() imported them
v1: Any = None
HIDDEN = 512
WARM = int(os.environ.get("BENCH_WARM", "20"))
BATCH = int(os.environ.get("TAAS_BATCH_SIZE", "100"))


class Meter:
    """Counts local steps; times those after the warm-up."""

    def __init__(self, task: str) -> None:
        self.task = task
        self.steps = 0
        self.first: float | None = None
        self.t0: float | None = None
        self.last: float | None = None

    def step(self) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first = time.time()
            print("BENCH_FIRST " + json.dumps({"task": self.task, "unix": self.first}), flush=True)
        if self.steps == WARM:
            self.t0 = now
        self.last = now
        self.steps += 1

    def report(self) -> None:
        measured = self.steps - 1 - WARM
        seconds = (self.last or 0) - (self.t0 or 0)
        rate = measured / seconds if measured > 0 and seconds > 0 else 0.0
        print(
            "BENCH "
            + json.dumps(
                {
                    "task": self.task,
                    "first_step_unix": self.first,
                    "steps": max(measured, 0),
                    "seconds": seconds,
                    "steps_per_s": rate,
                    "examples_per_s": rate
                    * BATCH
                    * max(int(os.environ.get("BENCH_TOWERS", "0")), 1),
                }
            ),
            flush=True,
        )


def _tensorflow() -> None:
    """Import TensorFlow (where the model is built, not at the top: see the module)."""
    global tf, v1
    import tensorflow

    tf, v1 = tensorflow, tensorflow.compat.v1


def load_data() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    return (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int64)


def dense(inputs, units: int, name: str):
    with v1.variable_scope(name, reuse=v1.AUTO_REUSE):
        weights = v1.get_variable(
            "weights", [inputs.shape[1], units], initializer=v1.glorot_uniform_initializer()
        )
        bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
    return tf.matmul(inputs, weights) + bias


def loss_of(images, labels):
    hidden = tf.nn.relu(dense(images, HIDDEN, "hidden"))
    return v1.losses.sparse_softmax_cross_entropy(labels, dense(hidden, 10, "logits"))


def hand_loop(max_steps: int, learning_rate: float) -> None:
    """What a seed program does without TaaS: build, init, loop until max_steps."""
    _tensorflow()
    x, y = load_data()
    rng = np.random.default_rng(1000)
    meter = Meter("local")
    with tf.Graph().as_default():
        global_step = v1.train.get_or_create_global_step()
        images = v1.placeholder(tf.float32, [None, 64])
        labels = v1.placeholder(tf.int64, [None])
        loss = loss_of(images, labels)
        train_op = v1.train.AdamOptimizer(learning_rate).minimize(loss, global_step)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            step = 0
            while step < max_steps:
                meter.step()
                batch = rng.integers(0, len(y), BATCH)
                _, _, step = session.run(
                    [train_op, loss, global_step], {images: x[batch], labels: y[batch]}
                )
    meter.report()


def base_class_trainer():
    import taas

    towers = int(os.environ.get("BENCH_TOWERS", "0"))
    if towers:
        import taas.graph.model  # where the graph engine picks the tower devices

        taas.graph.model.tower_devices = lambda settings, cluster: ["/device:GPU:0"] * towers

    class Bench(taas.DistributedTrainer):
        def build_model(self, global_step, is_chief, sync, num_replicas):
            _tensorflow()
            self.x, self.y = load_data()
            self.rng = np.random.default_rng(1000 + self.cluster.task_index)
            self.meter = Meter(self.cluster.task_name)
            self.images = v1.placeholder(tf.float32, [None, 64], name="images")
            self.labels = v1.placeholder(tf.int64, [None], name="labels")
            optimizer = v1.train.AdamOptimizer(self.settings.learning_rate)
            if towers:  # each tower takes its own slice of a towers x batch feed
                images, labels, calls = self.images, self.labels, iter(range(towers))

                def tower_loss():
                    i = next(calls) % towers
                    part = slice(i * BATCH, (i + 1) * BATCH)
                    return loss_of(images[part], labels[part])

                return tower_loss, optimizer
            return loss_of(self.images, self.labels), optimizer

        def train(self, session, global_step, is_chief):
            self.meter.step()
            batch = self.rng.integers(0, len(self.y), self.settings.batch_size * max(towers, 1))
            self.train_step(session, {self.images: self.x[batch], self.labels: self.y[batch]})
            return False

        def after_train(self, session, is_chief):
            self.meter.report()

    return Bench


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if os.environ.get("BENCH_MODE", "base") == "hand":
        hand_loop(
            int(os.environ.get("TF_MAX_STEPS", "500")),
            float(os.environ.get("TAAS_LEARNING_RATE", "0.01")),
        )
    else:
        os.environ.setdefault("TF_LOGDIR", tempfile.mkdtemp(prefix="taas-bench-model-"))
        base_class_trainer().main(sys.argv[1:])
