"""`taas run` shows the chief's training progress: the job table's PROGRESS and ETA (the columns
`kubectl get tfjobs` shows, from the same engine code), and `status.progress` in the final
report. The chief writes a file in a directory the runner gives it (the replicas' private
network namespace has no way out); only the chief is given one.

The first tests' replicas publish with the trainer library's own `taas.core.publish` (no TensorFlow,
so they run in a second); the last runs a real TensorFlow example.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.local.local_harness import final_status, replica, run_taas, tfjob, write

pytestmark = pytest.mark.timeout(240)

# A chief that trains 100 steps in ten documents, logging one scalar; the other replicas get
# no progress file, so `from_settings` gives them no publisher (they print that).
PUBLISHING = """
import os, time
from taas.core.publish import SCALARS, Publisher, document, log_scalar
from taas.core.settings import TrainerSettings
task = os.environ['JOB_NAME'] + ':' + os.environ['TASK_INDEX']
publisher = Publisher.from_settings(task, TrainerSettings(), True)
print(task, 'publishes' if publisher else 'has no progress file', flush=True)
for i in range(1, 11):
    log_scalar('accuracy', 0.5 + i / 100)
    SCALARS.stamp(i * 10)
    if publisher:
        publisher.update(document(task, i * 10, 100, 1.0 / i, 250.0, (10 - i) * 0.4), final=True)
    time.sleep(0.4)
"""


def test_the_job_table_and_status_show_the_chiefs_progress(tmp_path: Path) -> None:
    job = tfjob("prog", {"Worker": replica(PUBLISHING, replicas=2)})
    result = run_taas("run", str(write(tmp_path, job)), "--no-color", timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "[worker-0] worker:0 publishes" in out
    assert "[worker-1] worker:1 has no progress file" in out
    assert "TFJOB   STATE     PROGRESS   ETA" in out
    rows = re.findall(r"^prog\s+Running\s+(\d+)%\s+(\S+)\s", out, flags=re.MULTILINE)
    percents = [int(p) for p, _ in rows]
    assert percents == sorted(percents) and any(0 < p < 100 for p in percents), rows
    assert any(eta.endswith("s") and eta != "0s" for _, eta in rows), rows
    progress = final_status(out, "prog")["progress"]
    assert (progress["percentText"], progress["eta"]) == ("100%", "0s")
    assert (progress["step"], progress["maxSteps"]) == (100, 100)
    assert progress["scalars"]["accuracy"][-1] == {"step": 100, "value": 0.6}
    assert re.search(r"^prog\s+Succeeded\s+100%\s+0s\s", out, flags=re.MULTILINE)


def test_a_program_without_the_library_shows_no_progress(tmp_path: Path) -> None:
    job = tfjob("plain", {"Worker": replica("print('hello')")})
    result = run_taas("run", str(write(tmp_path, job)), "--no-color", timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "progress" not in final_status(result.stdout, "plain")
    assert re.search(r"^plain\s+Succeeded\s+-\s+-\s", result.stdout, flags=re.MULTILINE)


@pytest.mark.tensorflow
def test_a_real_tensorflow_chief(tmp_path: Path) -> None:
    """The linear-regression example (1 PS + 2 workers, real TensorFlow): the trainer
    library's chief publishes, the final status says where training ended."""
    text = (
        Path(__file__).resolve().parents[2] / "examples/linear_regression/tfjob.yaml"
    ).read_text()
    path = tmp_path / "job.yaml"
    path.write_text(text.replace("/tmp/taas/linear-regression", str(tmp_path / "model")))
    result = run_taas("run", str(path), "--no-color", "--quiet-table", timeout=220)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    progress = final_status(result.stdout, "linear-regression")["progress"]
    assert progress["maxSteps"] == 400 and progress["step"] >= 390
    assert (progress["percentText"], progress["eta"]) == ("100%", "0s")
    assert progress["loss"] < 1.0 and progress["examplesPerSecond"] > 0
