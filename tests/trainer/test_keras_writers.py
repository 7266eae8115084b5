"""What writes files under MultiWorkerMirroredStrategy (2 real worker processes): the export
(chief only, as the docs show, or every worker: one SavedModel either way, never a hang), a
CSVLogger the callbacks give on the chief only (``self.is_chief``): each epoch once; a
ModelCheckpoint on every worker, and History, as docs/trainer.md says."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.trainer.trainer_harness import LocalCluster

pytestmark = pytest.mark.tensorflow

PROGRAM = ["tests/trainer/programs/keras_writers.py"]


def _run(tmp_path: Path, **env: str) -> LocalCluster:
    cluster = LocalCluster(
        PROGRAM,
        tmp_path / "logs",
        {"worker": 2},
        env={
            "TAAS_MODEL_DIR": str(tmp_path / "model"),
            "TAAS_MAX_EPOCHS": "3",
            "TAAS_STEPS_PER_EPOCH": "5",
            "TAAS_STARTUP_TIMEOUT_SECS": "120",
            **env,
        },
    )
    cluster.start_all()
    return cluster


def _saved_models(root: Path) -> list[Path]:
    return sorted(path.parent for path in root.rglob("saved_model.pb"))


@pytest.mark.timeout(300)
def test_a_chief_only_export_and_a_chief_only_csv_logger(tmp_path: Path) -> None:
    cluster = _run(
        tmp_path,
        WRITERS_EXPORT_DIR=str(tmp_path / "export"),
        WRITERS_CSV=str(tmp_path / "epochs.csv"),
        WRITERS_CHECKPOINT=str(tmp_path / "keras-ckpt" / "weights"),
    )
    try:
        codes = cluster.wait(240)
        assert codes == {"worker:0": 0, "worker:1": 0}, cluster.logs()
        assert _saved_models(tmp_path) == [tmp_path / "export"], cluster.logs()
        assert (tmp_path / "export" / "variables" / "variables.index").exists()
        where = {
            name: json.loads(task.text().split("WHERE ", 1)[1].splitlines()[0])
            for name, task in cluster.tasks.items()
        }
        assert where == {
            "worker:0": {"is_chief": True, "task": ["worker", 0]},
            "worker:1": {"is_chief": False, "task": ["worker", 1]},
        }
        with open(tmp_path / "epochs.csv") as rows:
            epochs = [int(row["epoch"]) for row in csv.DictReader(rows)]
        assert epochs == [0, 1, 2]
        assert (tmp_path / "keras-ckpt" / "weights.index").exists(), cluster.logs()
        for task in cluster.tasks.values():
            history = json.loads(task.text().split("HISTORY ", 1)[1].splitlines()[0])
            assert len(history["loss"]) == 3, task.text()
    finally:
        cluster.close()


@pytest.mark.timeout(300)
def test_every_worker_exporting_writes_one_saved_model(tmp_path: Path) -> None:
    cluster = _run(tmp_path, WRITERS_EXPORT_DIR=str(tmp_path / "export"), WRITERS_EXPORT_BY="all")
    try:
        codes = cluster.wait(240)
        assert codes == {"worker:0": 0, "worker:1": 0}, cluster.logs()
        assert _saved_models(tmp_path) == [tmp_path / "export"], cluster.logs()
        for task in cluster.tasks.values():
            assert f'EXPORTED {{"path": "{tmp_path / "export"}"}}' in task.text()
    finally:
        cluster.close()
