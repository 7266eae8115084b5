"""``taas.KerasTrainer`` with ``fit`` as Keras users write it, on real TensorFlow processes:
their callbacks, a validation dataset, epochs, compiled metrics, and Keras 3 models.

The program (``programs/fit_keras.py``) learns ``y = 2x + 5`` with one Dense unit; it prints
what its own callback sees (``CB``) and the weights at ``after_train`` (``DONE``). The chief's
progress document (``progress_file``, what the operator and ``taas run`` read) and its
TensorBoard event files are read back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import taas
from tests.trainer.trainer_harness import LocalCluster, run_program

pytestmark = pytest.mark.tensorflow

FIT = ["tests/trainer/programs/fit_keras.py"]


def lines(text: str, kind: str) -> list[dict[str, Any]]:
    """The JSON of every ``<kind> {...}`` line."""
    return [
        json.loads(line.split(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(f"{kind} ")
    ]


def summary_tags(model_dir: Path) -> dict[str, list[int]]:
    """Scalar summary tag -> the steps written, from the chief's event files in model_dir."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(model_dir))
    events.Reload()
    return {tag: [e.step for e in events.Tensors(tag)] for tag in events.Tags()["tensors"]}


def fit_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "TAAS_MODEL_DIR": str(tmp_path / "model"),
        "TAAS_PROGRESS_FILE": str(tmp_path / "progress.json"),
        "TAAS_LEARNING_RATE": "0.1",
        **extra,
    }


@pytest.mark.timeout(120)
def test_the_progress_loss_is_the_converged_step_loss_not_kerass_running_mean(
    tmp_path: Path,
) -> None:
    """One epoch of 300 steps: the model learns the exact weights, so the step's loss is ~0;
    Keras's ``logs["loss"]`` (what progress showed before) is still the mean since step 1. The
    user's callback runs after TaaS's: at each batch TaaS has already counted the step."""
    done = run_program(FIT, fit_env(tmp_path, TF_MAX_STEPS="300", FIT_VALIDATION="0"))
    assert done.returncode == 0, done.stdout + done.stderr
    (end,) = lines(done.stdout, "DONE")
    assert abs(end["w"] - 2) < 1e-3 and abs(end["b"] - 5) < 1e-3, end
    batches = [cb for cb in lines(done.stdout, "CB") if cb["event"] == "batch_end"]
    assert len(batches) == 300
    assert all(cb["taas_step"] == cb["optimizer_step"] for cb in batches), batches[:3]
    keras_running_mean = batches[-1]["keras_loss"]
    doc = json.loads((tmp_path / "progress.json").read_text())
    assert doc["globalStep"] == 300
    assert doc["loss"] < 1e-4 < 0.1 < keras_running_mean, (doc["loss"], keras_running_mean)
    assert "[local] step 300 global 300/300 loss 0.0000 mae " in done.stdout
    assert [point["step"] for point in doc["scalars"]["mae"]] == [296, 297, 298, 299, 300]


@pytest.mark.timeout(150)
def test_epochs_validation_metrics_and_early_stopping_under_mirrored_strategy(
    tmp_path: Path,
) -> None:
    """5 epochs of 20 steps on two CPU replicas; EarlyStopping on val_loss stops after the
    second: exit 0 at global step 40 with after_train and the final checkpoint; the validation
    metrics are published at each epoch's end and, with the compiled metric, in TensorBoard."""
    done = run_program(
        FIT,
        fit_env(
            tmp_path,
            TAAS_MAX_EPOCHS="5",
            TAAS_STEPS_PER_EPOCH="20",
            TAAS_VALIDATION_STEPS="2",
            TAAS_NUM_TOWERS="2",
            TAAS_SAVE_SUMMARIES_STEPS="10",
            FIT_EARLY_STOP="1",
        ),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MirroredStrategy: 2 replicas" in done.stdout
    assert "fit stopped at global step 40 before max_steps 100" in done.stdout
    (end,) = lines(done.stdout, "DONE")
    assert end["step"] == 40
    epochs = [cb for cb in lines(done.stdout, "CB") if cb["event"] == "epoch_end"]
    assert [cb["epoch"] for cb in epochs] == [0, 1]
    assert set(epochs[0]["names"]) >= {"loss", "mae", "val_loss", "val_mae", "step_loss"}
    model = tmp_path / "model"
    assert (model / "ckpt-40.index").exists(), sorted(p.name for p in model.iterdir())
    doc = json.loads((tmp_path / "progress.json").read_text())
    assert [p["step"] for p in doc["scalars"]["val_loss"]] == [20, 40]
    assert [p["step"] for p in doc["scalars"]["val_mae"]] == [20, 40]
    tags = summary_tags(model)
    assert tags["loss"] == tags["mae"] == [10, 20, 30, 40], tags
    assert tags["val_loss"] == tags["val_mae"] == [20, 40], tags


def checkpoint_weights(path: Path) -> dict[str, float]:
    """The Dense unit's kernel and bias in the checkpoint at ``path`` (``.../ckpt-N``)."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(path))
    found = {}
    for name in reader.get_variable_to_shape_map():
        if name.startswith("model/") and name.endswith("/.ATTRIBUTES/VARIABLE_VALUE"):
            kind = name.split("/")[-3]
            if kind in ("kernel", "bias"):
                found["w" if kind == "kernel" else "b"] = float(reader.get_tensor(name).ravel()[0])
    return found


@pytest.mark.timeout(300)
@pytest.mark.parametrize("workers", [1, 2], ids=["one-process", "multi-worker-mirrored"])
def test_the_final_checkpoint_holds_the_weights_restore_best_weights_set(
    tmp_path: Path, workers: int
) -> None:
    """EarlyStopping(restore_best_weights=True) stops at step 40, a checkpoint step, and sets the
    first epoch's weights when fit ends: the final ckpt-40 holds those, what the model holds at
    after_train, not the step's (it was written before Keras restored them)."""
    env = fit_env(
        tmp_path,
        TAAS_MAX_EPOCHS="5",
        TAAS_STEPS_PER_EPOCH="20",
        TAAS_VALIDATION_STEPS="2",
        TAAS_SAVE_CHECKPOINTS_STEPS="20",
        FIT_EARLY_STOP="best",
        FIT_BATCH_CALLBACK="0",
        TAAS_STARTUP_TIMEOUT_SECS="120",
    )
    if workers == 1:
        done = run_program(FIT, env, timeout=150)
        assert done.returncode == 0, done.stdout + done.stderr
        outputs = [done.stdout]
    else:
        cluster = LocalCluster(FIT, tmp_path / "logs", {"worker": workers}, env=env)
        try:
            cluster.start_all()
            codes = cluster.wait(240)
            assert set(codes.values()) == {0}, cluster.logs()
            outputs = [task.text() for task in cluster.tasks.values()]
        finally:
            cluster.close()
    model = tmp_path / "model"
    saved = checkpoint_weights(model / "ckpt-40")
    for output in outputs:
        (end,) = lines(output, "DONE")
        first, second = [cb for cb in lines(output, "CB") if cb["event"] == "epoch_end"]
        assert end["step"] == 40 and (end["w"], end["b"]) == (first["w"], first["b"]), output
        assert abs(second["w"] - first["w"]) > 1e-3, (first, second)  # the restore changed them
        assert saved == {"w": end["w"], "b": end["b"]}, (saved, end, second)
    assert "saved checkpoint ckpt-40 again: the model as fit's callbacks left it" in outputs[0]
    assert sorted(p.name for p in model.glob("ckpt-*.index")) == ["ckpt-20.index", "ckpt-40.index"]


@pytest.mark.timeout(150)
def test_the_progress_line_at_each_epochs_end_carries_that_epochs_validation(
    tmp_path: Path,
) -> None:
    """3 epochs of 20 steps, a line every 8 steps: the line of each epoch's last step (20 and 60
    between the 8-step lines, 40 on one) is printed once, after the epoch's validation, with
    its val_loss; lines within an epoch show the previous epoch's. Before, each epoch's line
    showed the epoch before's, and the last epoch's never appeared."""
    done = run_program(
        FIT,
        fit_env(
            tmp_path,
            TAAS_MAX_EPOCHS="3",
            TAAS_STEPS_PER_EPOCH="20",
            TAAS_VALIDATION_STEPS="2",
            TAAS_LOG_EVERY_STEPS="8",
            FIT_BATCH_CALLBACK="0",
        ),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads((tmp_path / "progress.json").read_text())
    validation = {p["step"]: p["value"] for p in doc["scalars"]["val_loss"]}
    assert sorted(validation) == [20, 40, 60], doc
    shown: dict[int, str] = {}
    for line in done.stdout.splitlines():
        if line.startswith("[local] step ") and " global " in line:
            step = int(line.split(" global ")[1].split("/")[0])
            assert step not in shown, (step, done.stdout)
            shown[step] = line
    assert sorted(shown) == [8, 16, 20, 24, 32, 40, 48, 56, 60], done.stdout
    for step, line in shown.items():
        epoch_end = (step + 19) // 20 * 20  # the validation this line must show, if any
        latest = epoch_end if step == epoch_end else epoch_end - 20
        if latest == 0:
            assert "val_loss" not in line, line
        else:
            assert f" val_loss {validation[latest]:.4g}" in line, (line, validation)


@pytest.mark.timeout(150)
def test_a_resumed_run_counts_epochs_from_its_global_step(tmp_path: Path) -> None:
    """2 epochs of 20 steps, then the same model dir with max_epochs 5: it resumes at step 40,
    runs epochs 2, 3 and 4, and stops at max_steps 100."""
    env = fit_env(tmp_path, TAAS_STEPS_PER_EPOCH="20", TAAS_VALIDATION_STEPS="2")
    first = run_program(FIT, {**env, "TAAS_MAX_EPOCHS": "2"})
    assert first.returncode == 0, first.stdout + first.stderr
    assert [cb["epoch"] for cb in lines(first.stdout, "CB") if cb["event"] == "epoch_end"] == [0, 1]
    again = run_program(FIT, {**env, "TAAS_MAX_EPOCHS": "5"})
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resuming from checkpoint" in again.stdout and "global step 40" in again.stdout
    epochs = [cb["epoch"] for cb in lines(again.stdout, "CB") if cb["event"] == "epoch_end"]
    assert epochs == [2, 3, 4], again.stdout
    (end,) = lines(again.stdout, "DONE")
    assert end["step"] == 100


@pytest.mark.timeout(150)
@pytest.mark.parametrize("towers", ["", "2"], ids=["one-process", "mirrored"])
def test_keras_3_models_train_with_fit_in_one_process_and_mirrored(
    tmp_path: Path, towers: str
) -> None:
    """Validation, metrics and the export included (Keras 3 saves SavedModels with export)."""
    env = fit_env(
        tmp_path,
        FIT_KERAS="keras3",
        TAAS_MAX_EPOCHS="3",
        TAAS_STEPS_PER_EPOCH="50",
        TAAS_VALIDATION_STEPS="2",
        FIT_EXPORT_DIR=str(tmp_path / "export"),
    )
    if towers:
        env["TAAS_NUM_TOWERS"] = towers
    done = run_program(FIT, env)
    assert done.returncode == 0, done.stdout + done.stderr
    (end,) = lines(done.stdout, "DONE")
    assert end["step"] == 150 and abs(end["w"] - 2) < 0.05, end
    doc = json.loads((tmp_path / "progress.json").read_text())
    assert doc["loss"] < 1e-3 and [p["step"] for p in doc["scalars"]["val_loss"]] == [50, 100, 150]
    assert (tmp_path / "model" / "ckpt-150.index").exists()
    assert (tmp_path / "export" / "saved_model.pb").exists(), done.stdout  # model.export


#: What a Keras 3 model's task prints where Keras 3's fit cannot run (keras-team/keras#20585).
OWN_LOOP = "steps: Keras 3 train_step through TaaS's own fit (Keras 3's fails under "


def keras3_cluster(
    tmp_path: Path, shape: dict[str, int], logs: str = "logs", **extra: str
) -> LocalCluster:
    env = {**fit_env(tmp_path, FIT_KERAS="keras3", **extra), "TAAS_STARTUP_TIMEOUT_SECS": "120"}
    return LocalCluster(FIT, tmp_path / logs, shape, env=env)


@pytest.mark.timeout(400)
def test_keras_3_under_multi_worker_mirrored_trains_through_taass_loop(tmp_path: Path) -> None:
    """Keras 3's fit fails there; TaaS's own loop runs the same epochs: validation, the user's
    batch and epoch callbacks (each batch once TaaS has counted it), EarlyStopping on the
    all-reduced val_loss stopping both workers at step 40, the checkpoint, the progress. A
    second run resumes from that checkpoint (model and optimizer restored) and ends at 60."""
    epochs = {"TAAS_STEPS_PER_EPOCH": "20", "TAAS_VALIDATION_STEPS": "2"}
    cluster = keras3_cluster(
        tmp_path, {"worker": 2}, TAAS_MAX_EPOCHS="5", FIT_EARLY_STOP="1", **epochs
    )
    try:
        cluster.start_all()
        codes = cluster.wait(240)
        assert codes == {"worker:0": 0, "worker:1": 0}, cluster.logs()
        for task in cluster.tasks.values():
            text = task.text()
            assert OWN_LOOP + "MultiWorkerMirroredStrategy)" in text, text
            (end,) = lines(text, "DONE")
            assert end["step"] == 40, text
            records = lines(text, "CB")
            batches = [cb for cb in records if cb["event"] == "batch_end"]
            assert [cb["optimizer_step"] for cb in batches] == list(range(1, 41)), text
            assert all(cb["taas_step"] == cb["optimizer_step"] for cb in batches), batches[:3]
            epochs_seen = [cb for cb in records if cb["event"] == "epoch_end"]
            assert [cb["epoch"] for cb in epochs_seen] == [0, 1], text
            names = {"loss", "mae", "val_loss", "val_mae", "step_loss"}
            assert set(epochs_seen[0]["names"]) == names, epochs_seen
        chief = cluster.tasks["worker:0"].text()
        assert "fit stopped at global step 40 before max_steps 100" in chief
        assert (tmp_path / "model" / "ckpt-40.index").exists()
        doc = json.loads((tmp_path / "progress.json").read_text())
        assert [p["step"] for p in doc["scalars"]["val_loss"]] == [20, 40]
        assert doc["globalStep"] == 40 and doc["loss"] < 1.0
    finally:
        cluster.close()
    again = keras3_cluster(tmp_path, {"worker": 2}, "again", TAAS_MAX_EPOCHS="3", **epochs)
    try:
        again.start_all()
        codes = again.wait(240)
        assert codes == {"worker:0": 0, "worker:1": 0}, again.logs()
        chief = again.tasks["worker:0"].text()
        assert "resuming from checkpoint" in chief and "global step 40" in chief, chief
        epochs_seen = [cb["epoch"] for cb in lines(chief, "CB") if cb["event"] == "epoch_end"]
        assert epochs_seen == [2], chief
        (end,) = lines(chief, "DONE")
        assert end["step"] == 60 and abs(end["w"] - 2) < 0.5, end
    finally:
        again.close()


@pytest.mark.timeout(300)
def test_keras_3_under_parameter_server_strategy_trains_through_taass_loop(
    tmp_path: Path,
) -> None:
    """The coordinator runs TaaS's loop: steps on the workers, validation, the user's epoch
    callbacks, checkpoints. The optimizer counts every step (Keras 3's own additions to
    ``iterations`` race between two workers' steps: TaaS makes them atomic)."""
    cluster = keras3_cluster(
        tmp_path,
        {"chief": 1, "ps": 1, "worker": 2},
        TAAS_MAX_EPOCHS="3",
        TAAS_STEPS_PER_EPOCH="20",
        TAAS_VALIDATION_STEPS="2",
        FIT_BATCH_CALLBACK="0",
    )
    try:
        cluster.start_all()
        codes = cluster.wait(240)
        assert set(codes.values()) == {0}, cluster.logs()
        chief = cluster.tasks["chief:0"].text()
        assert OWN_LOOP + "ParameterServerStrategy)" in chief, chief
        (end,) = lines(chief, "DONE")
        assert end["step"] == 60, chief
        epochs = [cb for cb in lines(chief, "CB") if cb["event"] == "epoch_end"]
        assert [cb["epoch"] for cb in epochs] == [0, 1, 2], chief
        assert "val_loss" in epochs[0]["names"] and "step_loss" in epochs[0]["names"]
        assert (tmp_path / "model" / "ckpt-60.index").exists()
        doc = json.loads((tmp_path / "progress.json").read_text())
        assert [p["step"] for p in doc["scalars"]["val_loss"]] == [20, 40, 60]
    finally:
        cluster.close()


@pytest.mark.timeout(400)
def test_keras_3_under_parameter_server_strategy_learns_the_tf_keras_paths_weights(
    tmp_path: Path,
) -> None:
    """y = 2x + 5 for 300 steps, under ParameterServerStrategy with tf_keras (fit) and with
    Keras 3 (TaaS's loop): both end at the tf_keras path's weights within 2e-3. Asynchronous
    steps read weights another worker is updating, so the path there differs run to run; both
    converge to the exact weights (within 1e-3 each, as one process does in 300 steps)."""
    found = {}
    for keras in ("tf_keras", "keras3"):
        env = fit_env(tmp_path / keras, TF_MAX_STEPS="300", FIT_VALIDATION="0")
        env.update(FIT_KERAS=keras, FIT_BATCH_CALLBACK="0", TAAS_STARTUP_TIMEOUT_SECS="120")
        cluster = LocalCluster(
            FIT, tmp_path / keras / "logs", {"chief": 1, "ps": 1, "worker": 2}, env
        )
        try:
            cluster.start_all()
            codes = cluster.wait(240)
            assert set(codes.values()) == {0}, cluster.logs()
            (found[keras],) = lines(cluster.tasks["chief:0"].text(), "DONE")
        finally:
            cluster.close()
    for name in ("w", "b"):
        assert abs(found["keras3"][name] - found["tf_keras"][name]) < 2e-3, found
    assert abs(found["keras3"]["w"] - 2) < 1e-3 and abs(found["keras3"]["b"] - 5) < 1e-3, found


@pytest.mark.timeout(300)
def test_callbacks_and_validation_under_multi_worker_mirrored(tmp_path: Path) -> None:
    """Both workers validate and run EarlyStopping on the same (all-reduced) val_loss: they
    stop together at global step 40 and exit 0; the chief publishes the validation metrics."""
    cluster = LocalCluster(
        FIT,
        tmp_path / "logs",
        {"worker": 2},
        env={
            **fit_env(
                tmp_path,
                TAAS_MAX_EPOCHS="5",
                TAAS_STEPS_PER_EPOCH="20",
                TAAS_VALIDATION_STEPS="2",
                FIT_EARLY_STOP="1",
            ),
            "TAAS_STARTUP_TIMEOUT_SECS": "120",
        },
    )
    try:
        cluster.start_all()
        codes = cluster.wait(240)
        assert codes == {"worker:0": 0, "worker:1": 0}, cluster.logs()
        for task in cluster.tasks.values():
            (end,) = lines(task.text(), "DONE")
            assert end["step"] == 40, cluster.logs()
        doc = json.loads((tmp_path / "progress.json").read_text())
        assert [p["step"] for p in doc["scalars"]["val_loss"]] == [20, 40]
        assert doc["loss"] is not None and doc["loss"] < 1.0
    finally:
        cluster.close()


@pytest.mark.timeout(300)
def test_callbacks_and_validation_under_parameter_server_strategy(tmp_path: Path) -> None:
    """The coordinator runs fit with the user's callbacks and validation on the workers."""
    cluster = LocalCluster(
        FIT,
        tmp_path / "logs",
        {"ps": 1, "worker": 2},
        env={
            **fit_env(
                tmp_path,
                TAAS_MAX_EPOCHS="3",
                TAAS_STEPS_PER_EPOCH="20",
                TAAS_VALIDATION_STEPS="2",
                FIT_BATCH_CALLBACK="0",
            ),
            "TAAS_STARTUP_TIMEOUT_SECS": "120",
        },
    )
    try:
        cluster.start_all()
        codes = cluster.wait(240)
        assert codes == {"ps:0": 0, "worker:0": 0, "worker:1": 0}, cluster.logs()
        chief = cluster.tasks["worker:0"].text()
        (end,) = lines(chief, "DONE")
        assert end["step"] >= 60, chief
        epochs = [cb for cb in lines(chief, "CB") if cb["event"] == "epoch_end"]
        assert [cb["epoch"] for cb in epochs] == [0, 1, 2], chief
        doc = json.loads((tmp_path / "progress.json").read_text())
        assert [p["step"] for p in doc["scalars"]["val_loss"]] == [20, 40, 60]
    finally:
        cluster.close()


@pytest.mark.timeout(120)
def test_fit_hooks_beside_a_custom_step_exit_2(tmp_path: Path) -> None:
    """callbacks() and create_validation_dataset() with train(batch) overridden would never be
    called: refused before training, naming them."""
    done = run_program(
        ["tests/trainer/programs/recording_keras.py"],
        {
            "RECORD_STEP": "custom",
            "RECORD_FIT_HOOKS": "1",
            "TAAS_MODEL_DIR": str(tmp_path / "model"),
            "TF_MAX_STEPS": "5",
        },
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "callbacks, create_validation_dataset would never be called" in done.stderr
    assert "Traceback" not in done.stderr


def test_batch_level_callbacks_are_refused_under_parameter_server_strategy() -> None:
    """Keras runs only epoch-level callbacks there: a batch-level one is a clear exit 2
    before fit (Keras's own ValueError would be a traceback, exit 1)."""
    import tf_keras

    from taas.core.settings import SettingsError
    from taas.keras.fit import user_callbacks

    class Batches(tf_keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            pass

    class Trainer(taas.KerasTrainer):
        def callbacks(self):
            return [tf_keras.callbacks.EarlyStopping(), Batches()]

    early, _ = user_callbacks(Trainer(), tf_keras, coordinated=False)
    assert isinstance(early, tf_keras.callbacks.EarlyStopping)
    assert len(user_callbacks(Trainer(), tf_keras, coordinated=False)) == 2
    with pytest.raises(SettingsError, match="Batches, which has batch-level hooks"):
        user_callbacks(Trainer(), tf_keras, coordinated=True)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("keras", ["tf_keras", "keras3"])
def test_steps_per_execution_is_refused_naming_it(tmp_path: Path, keras: str) -> None:
    """Keras would call the callbacks once per 4 steps: TaaS's count of the steps (and its
    checkpoints and stop at max_steps) would be wrong, so it exits 2 before training."""
    done = run_program(
        FIT, fit_env(tmp_path, TF_MAX_STEPS="8", FIT_KERAS=keras, FIT_STEPS_PER_EXECUTION="4")
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "compiled the model with steps_per_execution=4" in done.stderr
    assert "Traceback" not in done.stderr
