"""Every hook on real TensorFlow processes, in the order the class docstring draws.

The recording trainer (``programs/recording_trainer.py``) prints one ``HOOK`` line per hook as
it fires. A real cluster (1 PS + 2 workers + an evaluator, gRPC over 127.0.0.1, TF_CONFIG from
the operator's builder) shows the order per task, the warm start through ``get_init_fn`` with
``checkpoint_path``, the loss-only form through ``create_optimizer``, and the evaluator calling
``evaluate`` on the chief's checkpoints. One process with two CPU towers runs the ``loss_fn``
form. The recording trainer also defines methods named like the old base class's engine
methods; each would print ``TRAP`` and fail if the engine called it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.trainer.trainer_harness import RECORDING, LocalCluster, hooks, only, order, run_program

pytestmark = pytest.mark.tensorflow


@pytest.mark.timeout(300)
def test_hook_order_on_a_cluster_with_warm_start_and_evaluator(tmp_path: Path) -> None:
    """Chief: build_model, create_optimizer, get_init_fn, init_fn, train..., after_train;
    worker 1 the same without the warm start; the evaluator builds the model and evaluates each
    new checkpoint up to max_steps; the PS runs no hook. Sync mode, so both workers train."""
    warm = tmp_path / "warm"
    first = run_program(RECORDING, {"TAAS_MODEL_DIR": str(warm), "TF_MAX_STEPS": "30"})
    assert first.returncode == 0, first.stdout + first.stderr
    (warm_end,) = only(hooks(first.stdout, "local"), "after_train")

    max_steps = 60
    cluster = LocalCluster(
        RECORDING,
        tmp_path / "logs",
        {"ps": 1, "worker": 2, "evaluator": 1},
        env={
            "TAAS_MODEL_DIR": str(tmp_path / "model"),
            "TAAS_CHECKPOINT_PATH": str(warm),
            "TF_MAX_STEPS": str(max_steps),
            "TAAS_SYNC": "true",
            "TAAS_SAVE_CHECKPOINTS_STEPS": "20",
            "TAAS_STARTUP_TIMEOUT_SECS": "120",
        },
    )
    try:
        cluster.start_all()
        codes = cluster.wait(240)
        assert codes == {"evaluator:0": 0, "ps:0": 0, "worker:0": 0, "worker:1": 0}, cluster.logs()
        logs = {name: task.text() for name, task in cluster.tasks.items()}
        assert not any("TRAP" in text for text in logs.values()), cluster.logs()

        chief = hooks(logs["worker:0"], "worker:0")
        assert order(chief) == [
            "build_model",
            "loss_fn",
            "create_optimizer",
            "get_init_fn",
            "init_fn",
            "train",
            "after_train",
        ], chief
        assert only(chief, "get_init_fn") == [{"checkpoint_path": str(warm)}]
        assert only(chief, "init_fn") == [{"w": warm_end["w"]}]  # restored the warm weights

        worker = hooks(logs["worker:1"], "worker:1")
        assert order(worker) == [
            "build_model",
            "loss_fn",
            "create_optimizer",
            "train",
            "after_train",
        ]

        for task, records, is_chief in (("worker:0", chief, True), ("worker:1", worker, False)):
            (built,) = only(records, "build_model")
            assert built == {
                "is_chief": is_chief,
                "sync": True,
                "num_replicas": 2,
                "global_step_is_attribute": True,
                "max_steps": max_steps,
            }, task
            assert only(records, "create_optimizer") == [{"train_op_yet": False}], task
            (end,) = only(records, "after_train")
            assert end["is_chief"] is is_chief and end["attributes_set"], (task, end)
            steps = [d["local_step"] for d in only(records, "train")]
            assert steps == list(range(1, len(steps) + 1)) and steps, (task, steps)

        evaluator = hooks(logs["evaluator:0"], "evaluator:0")
        assert order(evaluator) == ["build_model", "loss_fn", "create_optimizer", "evaluate"]
        evaluated = [d["step"] for d in only(evaluator, "evaluate")]
        assert evaluated == sorted(set(evaluated)) and evaluated[-1] >= max_steps, evaluated

        assert hooks(logs["ps:0"], "ps:0") == []
    finally:
        cluster.close()


@pytest.mark.timeout(120)
def test_loss_fn_form_builds_one_tower_per_device_through_the_base_class(tmp_path: Path) -> None:
    """A zero-argument loss_fn without an optimizer: create_optimizer first, then one loss_fn
    call per tower (two CPU towers), the train op from the base class; the user's methods
    named run/configure/_build_graph/... never run. An unknown TAAS_* variable that is no near
    miss of a setting only gets a note."""
    result = run_program(
        RECORDING,
        {
            "RECORD_FORM": "loss_fn",
            "TAAS_MODEL_DIR": str(tmp_path / "model"),
            "TF_MAX_STEPS": "20",
            "TAAS_NUM_TOWERS": "2",
            "TAAS_LEARNING_RATE": "0.1",
            "TAAS_UNRELATED_THING": "1",
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "TRAP" not in result.stdout
    records = hooks(result.stdout, "local")
    assert order(records) == ["build_model", "create_optimizer", "loss_fn", "train", "after_train"]
    assert len(only(records, "loss_fn")) == 2
    (end,) = only(records, "after_train")
    assert end["towers"] == 2 and end["attributes_set"], end
    losses = [d["loss"] for d in only(records, "train")]
    assert len(losses) == 20 and sum(losses[-3:]) < sum(losses[:3]) / 2, losses  # it learns
    assert "note: TAAS_UNRELATED_THING is not a TaaS trainer setting; ignored" in result.stdout
