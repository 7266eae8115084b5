"""Every hook of ``taas.KerasTrainer`` on real TensorFlow 2 processes, in the order the class
docstring draws, under each strategy the job's shape picks.

The recording trainer (``programs/recording_keras.py``) prints one ``HOOK`` line per hook. Real
clusters (gRPC over 127.0.0.1, TF_CONFIG from the operator's builder): 2 workers and an
evaluator (MultiWorkerMirroredStrategy, custom step, warm start through ``get_init_fn``), and
1 PS + 2 workers (ParameterServerStrategy, worker 0 coordinating, fit). One process: fit with a
NaN loss (exit 3), and two CPU towers (MirroredStrategy, the code path of a multi-GPU
process). The recording trainer also defines methods named like the engine's; each would print
``TRAP`` and fail if the engine called it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.trainer.trainer_harness import LocalCluster, hooks, only, order, run_program

pytestmark = pytest.mark.tensorflow

RECORDING = ["tests/trainer/programs/recording_keras.py"]


@pytest.mark.timeout(300)
def test_multi_worker_mirrored_hooks_with_warm_start_and_evaluator(tmp_path: Path) -> None:
    """Each worker: build_model, get_init_fn, init_fn, create_dataset, train (traced),
    after_train, in lockstep with the other; the evaluator builds the model and evaluates each
    new checkpoint up to max_steps."""
    warm = tmp_path / "warm"
    first = run_program(
        RECORDING,
        {"TAAS_MODEL_DIR": str(warm), "TF_MAX_STEPS": "30", "TAAS_LEARNING_RATE": "0.1"},
    )
    assert first.returncode == 0, first.stdout + first.stderr
    (warm_end,) = only(hooks(first.stdout, "local"), "after_train")

    max_steps = 60
    cluster = LocalCluster(
        RECORDING,
        tmp_path / "logs",
        {"worker": 2, "evaluator": 1},
        env={
            "RECORD_STEP": "custom",
            "TAAS_MODEL_DIR": str(tmp_path / "model"),
            "TAAS_CHECKPOINT_PATH": str(warm),
            "TF_MAX_STEPS": str(max_steps),
            "TAAS_LEARNING_RATE": "0.1",
            "TAAS_SAVE_CHECKPOINTS_STEPS": "20",
            "TAAS_STARTUP_TIMEOUT_SECS": "120",
        },
    )
    try:
        cluster.start_all()
        codes = cluster.wait(240)
        assert codes == {"evaluator:0": 0, "worker:0": 0, "worker:1": 0}, cluster.logs()
        logs = {name: task.text() for name, task in cluster.tasks.items()}
        assert not any("TRAP" in text for text in logs.values()), cluster.logs()
        ends = []
        for index in (0, 1):
            name = f"worker:{index}"
            records = hooks(logs[name], name)
            assert order(records) == [
                "build_model",
                "get_init_fn",
                "init_fn",
                "create_dataset",
                "train_batch",
                "after_train",
            ], records
            (built,) = only(records, "build_model")
            assert built["strategy"] == "CollectiveAllReduceStrategy"
            assert built["replicas"] == 2 and built["global_batch_size"] == 200
            assert only(records, "get_init_fn") == [{"checkpoint_path": str(warm)}]
            assert only(records, "init_fn") == [{"w": warm_end["w"]}]
            (dataset,) = only(records, "create_dataset")
            assert dataset == {"pipeline": index, "pipelines": 2}
            assert all(call["in_replica"] for call in only(records, "train_batch"))
            (end,) = only(records, "after_train")
            assert end["is_chief"] is (index == 0) and end["attributes_set"]
            assert end["step"] == max_steps  # the warm start began at step 0
            ends.append(end)
        assert ends[0]["w"] == ends[1]["w"]  # synchronous replicas hold the same weights
        assert abs(ends[0]["w"] - 2.0) < abs(warm_end["w"] - 2.0)  # trained on from warm

        evaluator = hooks(logs["evaluator:0"], "evaluator:0")
        assert order(evaluator) == ["build_model", "evaluate"], evaluator
        evaluated = only(evaluator, "evaluate")
        steps = [call["step"] for call in evaluated]
        assert steps == sorted(set(steps)) and steps[-1] == max_steps, steps
        assert evaluated[-1]["w"] == ends[0]["w"]  # the final checkpoint holds the final model
        assert (tmp_path / "model" / "eval").is_dir()  # metrics written as summaries
    finally:
        cluster.close()


@pytest.mark.timeout(300)
def test_parameter_server_hooks_with_worker_0_coordinating(tmp_path: Path) -> None:
    """No Chief replica: worker 0 coordinates (build_model, create_dataset, after_train; fit
    runs the steps on worker 1); worker 1 and the PS run no hook and exit 0 when told."""
    cluster = LocalCluster(
        RECORDING,
        tmp_path / "logs",
        {"ps": 1, "worker": 2},
        env={
            "TAAS_MODEL_DIR": str(tmp_path / "model"),
            "TF_MAX_STEPS": "60",
            "TAAS_LEARNING_RATE": "0.1",
            "TAAS_STARTUP_TIMEOUT_SECS": "120",
        },
    )
    try:
        cluster.start_all()
        codes = cluster.wait(240)
        assert codes == {"ps:0": 0, "worker:0": 0, "worker:1": 0}, cluster.logs()
        logs = {name: task.text() for name, task in cluster.tasks.items()}
        assert not any("TRAP" in text for text in logs.values()), cluster.logs()
        chief = hooks(logs["worker:0"], "worker:0")
        assert order(chief) == ["build_model", "create_dataset", "after_train"], chief
        assert only(chief, "build_model")[0]["strategy"] == "ParameterServerStrategyV2"
        (end,) = only(chief, "after_train")
        assert end["is_chief"] and end["step"] == 60 and abs(end["w"] - 2.0) < 0.2
        assert "coordinating 1 worker(s) and 1 PS task(s)" in logs["worker:0"]
        for name in ("worker:1", "ps:0"):
            assert hooks(logs[name], name) == []
            assert f"[{name}] all coordinator tasks done; exiting" in logs[name]
        assert "serving as worker:0" in logs["worker:1"]  # TensorFlow's view: worker 1 -> 0
    finally:
        cluster.close()


@pytest.mark.timeout(120)
def test_one_process_nan_loss_stops_fit_with_exit_3(tmp_path: Path) -> None:
    """The shared loop's non-finite check stops fit: exit 3, no after_train, no checkpoint of
    the NaN step (checkpoints every step here, so one would be written if the check came
    after the save)."""
    model = tmp_path / "model"
    done = run_program(
        RECORDING,
        {
            "TAAS_MODEL_DIR": str(model),
            "TF_MAX_STEPS": "50",
            "RECORD_NAN_FROM": "350",  # batch 100: step 4 sees NaN labels
            "TAAS_SAVE_CHECKPOINTS_STEPS": "1",
        },
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "the loss is NaN or infinite" in done.stderr and "Traceback" not in done.stderr
    assert order(hooks(done.stdout, "local")) == ["build_model", "create_dataset"]
    saved = sorted(p.name for p in model.glob("ckpt-*.index"))
    assert saved == ["ckpt-1.index", "ckpt-2.index", "ckpt-3.index"], saved


@pytest.mark.timeout(120)
def test_one_process_with_two_cpu_towers_uses_mirrored_strategy(tmp_path: Path) -> None:
    done = run_program(
        RECORDING,
        {
            "RECORD_STEP": "legacy",  # train(batch), the earlier name: still runs
            "TAAS_MODEL_DIR": str(tmp_path / "model"),
            "TF_MAX_STEPS": "40",
            "TAAS_LEARNING_RATE": "0.1",
            "TAAS_NUM_TOWERS": "2",
        },
    )
    assert done.returncode == 0, done.stdout + done.stderr
    records = hooks(done.stdout, "local")
    (built,) = only(records, "build_model")
    assert built["strategy"] == "MirroredStrategy" and built["replicas"] == 2
    assert "MirroredStrategy: 2 replicas: /device:CPU:0, /device:CPU:1" in done.stdout
    assert only(records, "after_train")[0]["step"] == 40
    assert "Recording.train(batch) is now named train_batch(batch)" in done.stdout
