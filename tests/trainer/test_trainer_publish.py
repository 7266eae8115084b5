"""The chief publishes its progress (taas.core.publish): the document, the file ``taas run`` reads,
the HTTP endpoint the operator reads, the user's scalars; real TensorFlow trainers for the
end-to-end cases. The operator's own model (taas_operator.api.ProgressReport) parses every
document here: the two sides agree on the JSON only."""

from __future__ import annotations

import io
import json
import math
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from taas.core.progress_log import ProgressReporter
from taas.core.publish import (
    SCALARS,
    TERMINATION_BYTES,
    Publisher,
    document,
    log_scalar,
)
from taas.core.settings import TrainerSettings
from taas_operator.api import ProgressReport
from taas_operator.api.constants import DEFAULT_PROGRESS_PORT, PROGRESS_PATH
from taas_operator.processes import free_ports
from tests.trainer.trainer_harness import LocalCluster, run_program

REPORTING = ["tests/trainer/programs/reporting_regression.py"]


@pytest.fixture(autouse=True)
def _fresh_scalars() -> None:
    SCALARS.clear()


def _get(port: int) -> tuple[int, bytes]:
    url = f"http://127.0.0.1:{port}{PROGRESS_PATH}"
    with urllib.request.urlopen(url, timeout=5) as answer:
        return answer.status, answer.read()


@pytest.mark.fast
def test_scalars_keep_the_last_five_with_steps_and_refuse_nonsense() -> None:
    for i in range(7):
        log_scalar("acc", 0.5 + i / 100)
    log_scalar("lr", 0.01, step=3)
    log_scalar("acc", math.nan)  # skipped: JSON has no NaN
    SCALARS.stamp(10)  # the loop: the step those values were logged in ended at 10
    assert SCALARS.recent() == {
        "acc": [{"step": 10, "value": 0.5 + i / 100} for i in range(2, 7)],
        "lr": [{"step": 3, "value": 0.01}],
    }
    with pytest.raises(TypeError, match="name must be a non-empty string"):
        log_scalar("", 1.0)
    with pytest.raises(TypeError, match=r"log_scalar\('acc', \.\.\.\): value must be a number"):
        log_scalar("acc", "high")  # type: ignore[arg-type]


@pytest.mark.fast
def test_document_is_what_the_operator_reads() -> None:
    log_scalar("acc", 0.9, step=400)
    doc = document("worker:0", 410, 1000, 0.3124, 2450.1, math.inf, now=1764000000.5)
    assert doc["etaSeconds"] is None  # not finite: left out
    report = ProgressReport.model_validate_json(json.dumps(doc))
    assert (report.task, report.time, report.global_step, report.max_steps) == (
        "worker:0",
        1764000000.5,
        410,
        1000,
    )
    assert (report.loss, report.examples_per_second) == (0.3124, 2450.1)
    assert report.scalars["acc"][0].step == 400 and report.scalars["acc"][0].value == 0.9
    assert DEFAULT_PROGRESS_PORT == 2223 and PROGRESS_PATH == "/progress"  # taas.core.publish's too


@pytest.mark.fast
def test_reporter_publishes_the_numbers_of_its_lines(tmp_path: Path) -> None:
    now = [0.0]
    path = tmp_path / "progress.json"
    publisher = Publisher("worker:0", path=str(path))
    out = io.StringIO()
    reporter = ProgressReporter(
        "worker:0", 100, 50, 10, 0.0, out, clock=lambda: now[0], publisher=publisher
    )
    for step in range(1, 21):
        now[0] += 0.5
        reporter.step(global_step=2 * step, loss=1.0 / step)
    reporter.publish(40, final=True)
    doc = json.loads(path.read_text())
    assert out.getvalue().splitlines()[-1] == (
        "[worker:0] step 20 global 40/100 loss 0.0500 | 100.0 ex/s 0.500 s/batch | ETA 15s"
    )
    assert (doc["globalStep"], doc["maxSteps"], doc["loss"]) == (40, 100, 0.05)
    assert doc["etaSeconds"] == pytest.approx(60 * 10 / 38)  # the line's ETA (15s)
    assert doc["examplesPerSecond"] == pytest.approx(100.0)  # 50 examples per 0.5 s
    assert not list(tmp_path.glob("*.tmp"))  # written atomically


@pytest.mark.fast
def test_http_endpoint_and_a_taken_port(capsys: pytest.CaptureFixture[str]) -> None:
    publisher = Publisher("worker:0", port=free_ports(1)[0])
    assert publisher.port is not None
    assert _get(publisher.port) == (204, b"")  # nothing published yet
    publisher.update(document("worker:0", 5, 10, None, None, None))
    status, body = _get(publisher.port)
    assert status == 200 and ProgressReport.model_validate_json(body).global_step == 5
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"http://127.0.0.1:{publisher.port}/other", timeout=5)
    assert missing.value.code == 404
    with socket.socket() as holder:
        holder.bind(("", 0))
        holder.listen()
        second = Publisher("worker:0", port=holder.getsockname()[1])
    assert second.port is None
    assert "progress not served on port" in capsys.readouterr().out


@pytest.mark.fast
def test_who_publishes() -> None:
    plain = TrainerSettings()
    pod = {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    assert Publisher.from_settings("worker:0", plain, True, environ={}) is None  # a laptop
    assert Publisher.from_settings("worker:1", plain, False, environ=pod) is None  # not chief
    off = TrainerSettings(progress_port=0)
    assert Publisher.from_settings("worker:0", off, True, environ=pod) is None
    port = free_ports(1)[0]
    mine = Publisher.from_settings("worker:0", TrainerSettings(progress_port=port), True, {})
    assert mine is not None and mine.port == port


@pytest.mark.fast
def test_the_last_report_is_the_termination_message(tmp_path: Path) -> None:
    """In a pod the chief's last document is its termination message (the kubelet keeps 4 KiB):
    the operator reads it from the pod's status once the chief has exited."""
    path = tmp_path / "termination-log"
    publisher = Publisher("worker:0", termination=str(path))
    for i in range(40):
        for step in range(5):
            log_scalar(f"a_rather_long_scalar_name_{i:02d}", step / 10, step=step)
    publisher.update(document("worker:0", 990, 1000, 0.25, 100.0, 1.0), final=False)
    publisher.update(document("worker:0", 1000, 1000, 0.2, 100.0, 0.0), final=True)
    body = path.read_bytes()
    assert len(body) <= TERMINATION_BYTES
    report = ProgressReport.model_validate_json(body)
    assert (report.global_step, report.max_steps, report.loss) == (1000, 1000, 0.2)
    assert 0 < len(report.scalars) <= 40  # the oldest points went first, then whole scalars
    pod = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "TAAS_TERMINATION_MESSAGE_PATH": str(path)}
    chief = Publisher.from_settings("worker:0", TrainerSettings(progress_port=0), True, pod)
    assert chief is not None and chief.termination == str(path)


@pytest.mark.tensorflow
@pytest.mark.timeout(180)
def test_a_real_trainer_writes_its_progress_file(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    ended = tmp_path / "termination-log"
    done = run_program(
        REPORTING,
        {
            "TAAS_MAX_STEPS": "60",
            "TAAS_MODEL_DIR": str(tmp_path / "model"),
            "TAAS_PROGRESS_FILE": str(path),
            "TAAS_LOG_EVERY_STEPS": "20",
            "TAAS_TERMINATION_MESSAGE_PATH": str(ended),
        },
    )
    assert done.returncode == 0, done.stdout + done.stderr
    last = ProgressReport.model_validate_json(ended.read_text())
    assert (last.global_step, last.max_steps) == (60, 60)
    report = ProgressReport.model_validate_json(path.read_text())
    assert (report.global_step, report.max_steps, report.task) == (60, 60, "local")
    assert report.eta_seconds == 0.0
    half = report.scalars["half_loss"]
    assert [p.step for p in half] == [56, 57, 58, 59, 60]
    assert report.loss is not None and half[-1].value == pytest.approx(report.loss / 2)
    assert [p.value for p in report.scalars["calls"]] == [56, 57, 58, 59, 60]


@pytest.mark.tensorflow
@pytest.mark.timeout(240)
def test_only_the_chief_of_a_cluster_serves_its_progress(tmp_path: Path) -> None:
    port = free_ports(1)[0]
    cluster = LocalCluster(
        REPORTING,
        tmp_path,
        {"ps": 1, "worker": 2},
        env={
            "TAAS_MAX_STEPS": "400",
            "TAAS_MODEL_DIR": str(tmp_path / "model"),
            "TAAS_PROGRESS_PORT": str(port),  # every task is told; the chief alone serves
            "TEST_STEP_SLEEP": "0.05",
        },
    )
    try:
        cluster.start_all()
        cluster.wait_for_line("worker:0", "first step done", 150)
        seen = []
        deadline = time.monotonic() + 30
        while len(seen) < 2 and time.monotonic() < deadline:
            status, body = _get(port)
            if status == 200:
                report = ProgressReport.model_validate_json(body)
                if not seen or report.global_step > seen[-1].global_step:
                    seen.append(report)
            time.sleep(1.0)
        assert len(seen) == 2, cluster.logs()
        assert seen[0].task == "worker:0" and seen[0].max_steps == 400
        assert seen[1].loss is not None and "half_loss" in seen[1].scalars
        codes = cluster.wait(150)
        assert set(codes.values()) == {0}, cluster.logs()
        assert "progress not served" not in cluster.tasks["worker:1"].text()
    finally:
        cluster.close()
