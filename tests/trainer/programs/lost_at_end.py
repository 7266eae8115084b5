"""Test program: ``y = 2x + 5`` under ``fit``; the task named by ``LOST_AT_END`` (``worker:1``)
stops itself with SIGSTOP when it reaches the end barrier, after training, ``after_train`` and
its final checkpoint: its peer sees what a loaded machine showed in CI (the coordination
service's heartbeat timeout at the end), the stopped task is killed by the test."""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import tensorflow as tf
import tf_keras as keras

import taas
from taas.keras.engine import KerasEngine

LOST = os.environ.get("LOST_AT_END", "")


class Regression(taas.KerasTrainer):
    def build_model(self):
        model = keras.Sequential([keras.layers.Input((1,)), keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(self.settings.learning_rate), loss="mse")
        return model

    def create_dataset(self, input_context):
        xs = np.linspace(-1, 1, 256, dtype=np.float32).reshape(-1, 1)
        batch = input_context.get_per_replica_batch_size(self.global_batch_size)
        return tf.data.Dataset.from_tensor_slices((xs, 2 * xs + 5)).repeat().batch(batch)


def stop_at_the_end(leave_together):
    def leave(engine, plan):
        if engine.cluster.task_name == LOST:
            print(f"LOST {json.dumps({'task': LOST})}", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)
        return leave_together(engine, plan)

    return leave


KerasEngine._leave_together = stop_at_the_end(KerasEngine._leave_together)

if __name__ == "__main__":
    Regression.main()
