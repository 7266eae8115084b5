"""The engine seam in process: which engine drives a hook class, the shared loop's stop rules,
and the step helper outside an engine. Real TensorFlow graphs, no cluster."""

from __future__ import annotations

import math

import pytest

from taas.core.engine import StepLog, StepResult
from taas.core.exit_codes import ExitCode, LossNotFiniteError, classify
from taas.core.loop import train_loop
from taas.core.settings import TrainerSettings
from taas.program import engine_for

pytestmark = pytest.mark.tensorflow


def test_the_graph_engine_drives_a_subclass_even_one_with_engine_named_methods() -> None:
    import taas
    from taas.graph.engine import GraphEngine

    class Shadowing(taas.DistributedTrainer):
        def run(self) -> None:  # the old base class's engine entry point
            raise AssertionError("never called")

    # the factory builds a GraphEngine for every task but a PS that can serve lean
    engine = engine_for(Shadowing)(Shadowing(), TrainerSettings(max_steps=7), taas.ClusterInfo())
    assert type(engine) is GraphEngine
    assert type(engine).run is GraphEngine.run
    assert engine.trainer.settings.max_steps == 7  # the hooks see the settings and cluster
    with pytest.raises(TypeError, match=r"subclass taas\.DistributedTrainer"):
        engine_for(object)


def test_step_log_hands_each_result_to_the_loop_once() -> None:
    log = StepLog()
    assert log.take() is None
    log.record(StepResult(3, 0.5, 10))
    assert log.take() == StepResult(3, 0.5, 10)
    assert log.take() is None


def test_loop_stops_on_a_non_finite_loss_and_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    settings = TrainerSettings(max_steps=100, log_every_steps=0)
    losses = iter([1.0, 0.5, math.nan])
    steps = iter(range(1, 100))

    def diverging() -> tuple[StepResult, bool]:
        return StepResult(next(steps), next(losses)), False

    expected = r"the loss is NaN or infinite.*\(loss nan at global step 3\)"
    with pytest.raises(LossNotFiniteError, match=expected) as caught:
        train_loop("worker:0", settings, 0, diverging, lambda: False)
    assert classify(caught.value) == ExitCode.LOSS_NOT_FINITE == 3

    calls = iter(range(1, 100))

    def stopping() -> tuple[StepResult, bool]:
        step = next(calls)
        return StepResult(step, 1.0), step == 4

    assert train_loop("worker:0", settings, 0, stopping, lambda: False) == 4
    out = capsys.readouterr().out
    assert "train() returned True: stopping early" in out
    assert "training done: 4 local steps, global step 4" in out


def test_train_step_outside_the_engine_says_so() -> None:
    import tensorflow as tf

    import taas

    v1 = tf.compat.v1
    trainer = taas.DistributedTrainer()
    with tf.Graph().as_default():
        w = v1.get_variable("w", [], initializer=v1.ones_initializer())
        trainer.loss = tf.square(w)
        trainer.train_op = v1.train.GradientDescentOptimizer(0.1).minimize(trainer.loss)
        with pytest.raises(RuntimeError, match="runs under the engine"):
            trainer.train_step(None)
