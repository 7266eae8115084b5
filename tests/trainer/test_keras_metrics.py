"""The numbers ``fit`` reports under TaaS are plain single-process Keras's, in every strategy.

``programs/fit_metrics.py`` trains a seeded logistic model (compiled ``accuracy`` and ``AUC``)
under TaaS, and, with ``METRICS_PLAIN``, as plain ``model.fit`` in one process with the same
global batch: the reference. Each synchronous strategy's global batch holds the examples the
reference's does, so every step's numbers must be the reference's: what the user's callbacks
see (each batch's and each epoch's logs, History's), the chief's progress lines and its
progress document (the operator's ``status.progress``, ``taas run``'s and the dashboard's).
ParameterServerStrategy's steps run on whichever worker is free, so there every batch holds
the same examples and the learning rate is 0: every step's numbers are the reference's too.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.trainer.programs.logistic_data import examples
from tests.trainer.test_keras_fit import lines
from tests.trainer.trainer_harness import LocalCluster, run_program

pytestmark = pytest.mark.tensorflow

METRICS = ["tests/trainer/programs/fit_metrics.py"]
STEPS, EPOCHS = 3, 2
NAMES = ("loss", "accuracy", "auc")
#: A progress line's numbers: ``loss 0.9330 accuracy 0.4375 auc 0.3906``.
LINE = re.compile(r"global (\d+)/\d+ loss (\S+) accuracy (\S+) auc (\S+) \|")

_plain: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}


def plain_keras(global_batch: int, **env: str) -> dict[str, Any]:
    """The reference run's batch logs, epoch logs and per-step losses (cached per settings)."""
    key = tuple(sorted({"METRICS_PLAIN": str(global_batch), **env}.items()))
    if key not in _plain:
        settings = {**dict(key), "METRICS_STEPS": str(STEPS), "METRICS_EPOCHS": str(EPOCHS)}
        done = run_program(METRICS, settings)
        assert done.returncode == 0, done.stdout + done.stderr
        records = lines(done.stdout, "CB")
        batches = [r["logs"] for r in records if r["event"] == "batch"]
        _plain[key] = {
            "batches": batches,
            "epochs": [r["logs"] for r in records if r["event"] == "epoch"],
            "history": lines(done.stdout, "HISTORY")[0],
            "step_losses": step_losses([b["loss"] for b in batches]),
            "weights": lines(done.stdout, "DONE")[0],
        }
    return _plain[key]


def step_losses(running: list[float]) -> list[float]:
    """Each step's own loss from Keras's running means (equal batches, reset each epoch)."""
    found = []
    for step, mean in enumerate(running):
        k = step % STEPS
        found.append((k + 1) * mean - k * running[step - 1] if k else mean)
    return found


def close(got: float, want: float, name: str) -> bool:
    """Loss within 1e-4 relative; accuracy, AUC within 1e-4."""
    return abs(got - want) <= (1e-4 * abs(want) if "loss" in name else 1e-4)


def check_logs(got: dict[str, float], want: dict[str, float], step_loss: float, where: str) -> None:
    for name in NAMES:
        assert close(got[name], want[name], name), (where, name, got, want)
    assert close(got["step_loss"], step_loss, "step_loss"), (where, got, step_loss)
    assert 0 <= got["accuracy"] <= 1 and 0 <= got["auc"] <= 1, (where, got)


def check_task(text: str, want: dict[str, Any], batch_logs: bool, task: str) -> None:
    """What a task's callback saw, each batch (when it has that hook) and each epoch."""
    records = lines(text, "CB")
    epochs = [r for r in records if r["event"] == "epoch"]
    assert [r["epoch"] for r in epochs] == list(range(EPOCHS)), (task, text[-3000:])
    for epoch, record in enumerate(epochs):
        last = want["step_losses"][(epoch + 1) * STEPS - 1]
        check_logs(record["logs"], want["epochs"][epoch], last, f"{task} epoch {epoch}")
        for name in NAMES:  # History: Keras's own epoch values
            assert close(record["logs"][name], want["history"][name][epoch], name), task
    if batch_logs:
        batches = [r["logs"] for r in records if r["event"] == "batch"]
        assert len(batches) == STEPS * EPOCHS, (task, text[-3000:])
        for step, logs in enumerate(batches):
            check_logs(logs, want["batches"][step], want["step_losses"][step], f"{task} {step}")


def check_published(text: str, progress: Path, want: dict[str, Any]) -> None:
    """The chief's progress lines and its progress document: the step's loss, the metrics."""
    shown = [match.groups() for match in LINE.finditer(text)]
    assert [int(step) for step, *_ in shown] == list(range(1, STEPS * EPOCHS + 1)), text[-3000:]
    for step, loss, accuracy, auc in shown:
        index = int(step) - 1
        assert abs(float(loss) - want["step_losses"][index]) <= 6e-5, (step, loss, want)
        for name, value in (("accuracy", accuracy), ("auc", auc)):
            assert abs(float(value) - want["batches"][index][name]) <= 1e-4, (step, name, value)
    doc = json.loads(progress.read_text())
    assert doc["globalStep"] == STEPS * EPOCHS
    assert close(doc["loss"], want["step_losses"][-1], "loss"), (doc, want)
    for name in ("accuracy", "auc"):
        for point in doc["scalars"][name]:
            expected = want["batches"][point["step"] - 1][name]
            assert close(point["value"], expected, name), (name, point, expected)


def settings(tmp_path: Path, batch: int, **extra: str) -> dict[str, str]:
    return {
        "TAAS_MODEL_DIR": str(tmp_path / "model"),
        "TAAS_PROGRESS_FILE": str(tmp_path / "progress.json"),
        "TAAS_BATCH_SIZE": str(batch),
        "TAAS_STEPS_PER_EPOCH": str(STEPS),
        "TAAS_MAX_EPOCHS": str(EPOCHS),
        "TAAS_LOG_EVERY_STEPS": "1",
        "TAAS_STARTUP_TIMEOUT_SECS": "120",
        **extra,
    }


@pytest.mark.timeout(240)
@pytest.mark.parametrize("towers", ["1", "2"], ids=["one-process", "mirrored-2-towers"])
def test_one_process_reports_plain_kerass_numbers(tmp_path: Path, towers: str) -> None:
    """One process, and two CPU towers (MirroredStrategy): the global batch is batch_size."""
    want = plain_keras(16)
    env = settings(tmp_path, 16)
    if towers != "1":
        env["TAAS_NUM_TOWERS"] = towers
    done = run_program(METRICS, env, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    check_task(done.stdout, want, batch_logs=True, task="local")
    check_published(done.stdout, tmp_path / "progress.json", want)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("workers", [2, 3])
def test_multi_worker_mirrored_reports_global_means_not_sums(tmp_path: Path, workers: int) -> None:
    """Every worker's callbacks see the global batch's numbers (batch_size 8 per worker), once:
    before, each was the sum over the workers (loss x2, accuracy 0.9375 for 0.4688)."""
    want = plain_keras(8 * workers)
    cluster = LocalCluster(METRICS, tmp_path / "logs", {"worker": workers}, settings(tmp_path, 8))
    try:
        cluster.start_all()
        codes = cluster.wait(240)
        assert set(codes.values()) == {0}, cluster.logs()
        for name, task in cluster.tasks.items():
            check_task(task.text(), want, batch_logs=True, task=name)
        check_published(cluster.tasks["worker:0"].text(), tmp_path / "progress.json", want)
    finally:
        cluster.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("keras", ["tf_keras", "keras3"])
def test_parameter_server_strategy_reports_plain_kerass_numbers(tmp_path: Path, keras: str) -> None:
    """Chief, PS and 2 workers; the same batch at every step, learning rate 0. A Keras 3 model
    trains through TaaS's own loop (Keras 3's fit has no ParameterServerStrategy path)."""
    same = {"METRICS_SAME_BATCH": "1", "METRICS_LR": "0", "METRICS_KERAS": keras}
    want = plain_keras(16, **same)
    shape = {"chief": 1, "ps": 1, "worker": 2}
    cluster = LocalCluster(METRICS, tmp_path / "logs", shape, settings(tmp_path, 16, **same))
    try:
        cluster.start_all()
        codes = cluster.wait(240)
        assert set(codes.values()) == {0}, cluster.logs()
        chief = cluster.tasks["chief:0"].text()
        assert (OWN_LOOP in chief) == (keras == "keras3"), chief
        check_task(chief, want, batch_logs=False, task="chief:0")
        check_published(chief, tmp_path / "progress.json", want)
        (done,) = lines(chief, "DONE")
        assert weights(done) == weights(want["weights"])  # learning rate 0: never moved
    finally:
        cluster.close()


#: What a Keras 3 model's task prints where Keras 3's fit cannot run.
OWN_LOOP = "steps: Keras 3 train_step through TaaS's own fit"
#: Final weights against one process's and the tf_keras path's (see the test using it).
WEIGHTS = {"rtol": 1e-5, "atol": 1e-6}


def weights(done: dict[str, Any]) -> list[float]:
    """A DONE line's kernel and bias, in one list."""
    return [*done["kernel"], *done["bias"]]


@pytest.mark.timeout(600)
def test_keras_3_under_multi_worker_mirrored_reports_one_process_keras_3s_numbers(
    tmp_path: Path,
) -> None:
    """Keras 3's fit fails under MultiWorkerMirroredStrategy (keras-team/keras#20585); TaaS's
    own loop trains the model. Two workers of batch 8: every worker's callbacks and the
    chief's progress show one-process Keras 3's numbers (global batch 16), and the final
    weights are one process's and the tf_keras path's on the same seeded program (the same
    2 x 8 run with ``import tf_keras as keras``).

    Weights within 1e-5 relative (``WEIGHTS``): one process sums the same float32 gradients
    in another order than the all-reduce, a few units in the last place (measured: 2.3e-7
    relative after the 6 steps); the tf_keras path's were bit for bit the same."""
    want = plain_keras(16, METRICS_KERAS="keras3")
    found: dict[str, list[list[float]]] = {}
    for keras in ("keras3", "tf_keras"):
        run = tmp_path / keras
        env = settings(run, 8, METRICS_KERAS=keras)
        cluster = LocalCluster(METRICS, run / "logs", {"worker": 2}, env)
        try:
            cluster.start_all()
            codes = cluster.wait(240)
            assert codes == {"worker:0": 0, "worker:1": 0}, cluster.logs()
            if keras == "keras3":
                for name, task in cluster.tasks.items():
                    assert OWN_LOOP in task.text(), task.text()[-3000:]
                    check_task(task.text(), want, batch_logs=True, task=name)
                check_published(cluster.tasks["worker:0"].text(), run / "progress.json", want)
            found[keras] = [weights(lines(t.text(), "DONE")[0]) for t in cluster.tasks.values()]
        finally:
            cluster.close()
    for got, tf_keras in zip(found["keras3"], found["tf_keras"], strict=True):
        np.testing.assert_allclose(got, weights(want["weights"]), **WEIGHTS)
        np.testing.assert_allclose(got, tf_keras, **WEIGHTS)


@pytest.mark.timeout(240)
def test_one_sgd_step_from_zero_weights_reports_ln_2_under_multi_worker_mirrored(
    tmp_path: Path,
) -> None:
    """Two workers, one SGD step from zero weights: every prediction is 1/2, so the loss over
    the global batch is ln 2 (it was reported as 2 ln 2), the accuracy the share of negative
    labels, the AUC 1/2; the step moves the weights by the global batch's mean gradient."""
    lr, per_worker = 0.5, 8
    env = settings(tmp_path, per_worker, TF_MAX_STEPS="1", METRICS_INIT="zeros")
    for name in ("TAAS_STEPS_PER_EPOCH", "TAAS_MAX_EPOCHS"):
        del env[name]
    cluster = LocalCluster(METRICS, tmp_path / "logs", {"worker": 2}, {**env, "METRICS_LR": "0.5"})
    try:
        cluster.start_all()
        codes = cluster.wait(200)
        assert codes == {"worker:0": 0, "worker:1": 0}, cluster.logs()
        x, y = examples()
        x, y = x[: 2 * per_worker], y[: 2 * per_worker]  # the global batch of step 1
        kernel = lr * ((y - 0.5) * x).mean(axis=0)
        bias = lr * (y - 0.5).mean()
        for name, task in cluster.tasks.items():
            (batch,) = [r["logs"] for r in lines(task.text(), "CB") if r["event"] == "batch"]
            assert abs(batch["loss"] - math.log(2)) < 1e-6, (name, batch)
            assert abs(batch["step_loss"] - math.log(2)) < 1e-6, (name, batch)
            assert abs(batch["accuracy"] - float((y == 0).mean())) < 1e-6, (name, batch)
            assert abs(batch["auc"] - 0.5) < 1e-6, (name, batch)
            (done,) = lines(task.text(), "DONE")
            np.testing.assert_allclose(done["kernel"], kernel, rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(done["bias"], [bias], rtol=1e-5, atol=1e-7)
        doc = json.loads((tmp_path / "progress.json").read_text())
        assert abs(doc["loss"] - math.log(2)) < 1e-6, doc
        assert "global 1/1 loss 0.6931 " in cluster.tasks["worker:0"].text()
    finally:
        cluster.close()
