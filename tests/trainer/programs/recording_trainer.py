"""Test program: a trainer that records every hook as it fires, one ``HOOK`` line each.

Each line is ``HOOK <task> <hook> <json details>`` on stdout, flushed, so a test can read the
order in which the hooks fired in every process of a real cluster. The model is ``y = 2x + 1``
on placeholders (a loss tensor, so the base class builds the train op). Environment:

- ``RECORD_FORM``: ``loss`` (default): ``build_model`` returns the loss alone, so the base class
  calls ``create_optimizer``; ``loss_fn``: a zero-argument loss function (one tower per device,
  ``num_towers`` CPU towers here), also without an optimizer.
- ``RECORD_NAN_FROM``: from this local step on, feed NaN inputs (the non-finite loss test).

It also defines methods named like the engine methods of the old all-in-one base class
(``run``, ``configure``, ``_build_graph``, ``_train``, ...). Each prints ``TRAP <name>`` and
raises: the engine is a separate object and must never call them.
"""

from __future__ import annotations

import json
import os

import numpy as np
import tensorflow as tf

import taas

v1 = tf.compat.v1
FORM = os.environ.get("RECORD_FORM", "loss")
NAN_FROM = int(os.environ.get("RECORD_NAN_FROM", "0"))


class Recording(taas.DistributedTrainer):
    """Records each hook; trains y = 2x + 1."""

    def record(self, hook: str, **details: object) -> None:
        print(f"HOOK {self.cluster.task_name} {hook} {json.dumps(details)}", flush=True)

    def variable(self, name: str) -> object:
        (var,) = [v for v in v1.global_variables() if v.op.name == name]
        return var

    # ------------------------------------------------------------------ hooks

    def build_model(self, global_step, is_chief, sync, num_replicas):
        self.record(
            "build_model",
            is_chief=is_chief,
            sync=sync,
            num_replicas=num_replicas,
            global_step_is_attribute=self.global_step is global_step,
            max_steps=self.settings.max_steps,
        )
        self.local_steps = 0
        self.rng = np.random.default_rng(self.cluster.task_index + 7)
        self.x = v1.placeholder(tf.float32, [None], name="x")
        self.y = v1.placeholder(tf.float32, [None], name="y")

        def loss_fn():
            w = v1.get_variable("w", [], initializer=v1.zeros_initializer())
            b = v1.get_variable("b", [], initializer=v1.zeros_initializer())
            self.record("loss_fn")
            return tf.reduce_mean(tf.square(w * self.x + b - self.y))

        return loss_fn if FORM == "loss_fn" else loss_fn()

    def create_optimizer(self):
        self.record("create_optimizer", train_op_yet=self.train_op is not None)
        return super().create_optimizer()

    def get_init_fn(self, checkpoint_path):
        self.record("get_init_fn", checkpoint_path=checkpoint_path)
        saver = v1.train.Saver({"w": self.variable("w"), "b": self.variable("b")})
        source = v1.train.latest_checkpoint(checkpoint_path) or checkpoint_path

        def init_fn(session):
            saver.restore(session, source)
            w = float(session.run(self.variable("w")))
            self.record("init_fn", w=round(w, 6))

        return init_fn

    def train(self, session, global_step, is_chief):
        self.local_steps += 1
        xs = self.rng.uniform(-1, 1, self.settings.batch_size).astype(np.float32)
        if NAN_FROM and self.local_steps >= NAN_FROM:
            xs[0] = np.nan
        loss = self.train_step(session, {self.x: xs, self.y: 2 * xs + 1})
        self.record("train", local_step=self.local_steps, loss=round(loss, 6))
        return False

    def after_train(self, session, is_chief):
        self.record(
            "after_train",
            is_chief=is_chief,
            w=round(float(session.run(self.variable("w"))), 6),
            attributes_set=all(
                getattr(self, name) is not None
                for name in ("train_op", "loss", "optimizer", "global_step")
            ),
            towers=len(
                {op.name.split("/")[0] for op in session.graph.get_operations()}
                & {f"tower_{i}" for i in range(4)}
            ),
        )

    def evaluate(self, session, global_step):
        self.record(
            "evaluate", step=int(global_step), w=round(float(session.run(self.variable("w"))), 6)
        )

    # ------------------------------------- names the old base class used for its engine

    def _trap(self, name: str) -> None:
        print(f"TRAP {name}", flush=True)
        raise RuntimeError(f"the engine called the user's {name}()")

    def run(self, *args, **kwargs):
        self._trap("run")

    def configure(self, *args, **kwargs):
        self._trap("configure")

    def _build_graph(self, *args, **kwargs):
        self._trap("_build_graph")

    def _finish_model(self, *args, **kwargs):
        self._trap("_finish_model")

    def _train(self, *args, **kwargs):
        self._trap("_train")

    def _hooks(self, *args, **kwargs):
        self._trap("_hooks")

    def _replicas(self, *args, **kwargs):
        self._trap("_replicas")

    def _device_fn(self, *args, **kwargs):
        self._trap("_device_fn")

    def _run_evaluator(self, *args, **kwargs):
        self._trap("_run_evaluator")

    def _signal_done(self, *args, **kwargs):
        self._trap("_signal_done")

    def _session(self, *args, **kwargs):
        self._trap("_session")


if __name__ == "__main__":
    Recording.main()
