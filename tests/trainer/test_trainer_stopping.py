"""SIGTERM ends every trainer process at once (issue 24), even as the first process of a PID
namespace, as in a container, where a signal without a handler is dropped, and even while
TensorFlow blocks the main thread in C++ (a parameter server waiting on its queue). Real
TensorFlow processes; the PID namespace is made with util-linux's `unshare` (root)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from taas_operator.processes import free_ports, stop
from tests.trainer.trainer_harness import LocalCluster

pytestmark = [pytest.mark.tensorflow, pytest.mark.timeout(240)]
PROGRAM = ["tests/trainer/programs/reporting_regression.py"]


def _inner_pid(outer: int, timeout: float = 30.0) -> int:
    """The pid (in this namespace) of `unshare --fork`'s child: the namespace's PID 1."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = Path(f"/proc/{outer}/task/{outer}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.1)
    raise AssertionError("unshare started no child")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root")
def test_a_parameter_server_as_pid_1_ends_within_2_s_of_sigterm(tmp_path: Path) -> None:
    env_extra = {"TAAS_MODEL_DIR": str(tmp_path / "model")}
    cluster = LocalCluster(PROGRAM, tmp_path / "logs", {"ps": 1, "worker": 1}, env=env_extra)
    log = tmp_path / "ps-0-pid1.log"
    env = {**os.environ, **cluster.env, "TF_CONFIG": cluster.tf_config("ps", 0)}
    with log.open("wb") as out:
        outer = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--kill-child", sys.executable, *PROGRAM],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=Path(__file__).parents[2],
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while "serving at" not in log.read_text(errors="replace"):
            assert outer.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        inner = _inner_pid(outer.pid)
        asked = time.monotonic()
        os.kill(inner, signal.SIGTERM)
        code = outer.wait(timeout=30)
        took = time.monotonic() - asked
    finally:
        stop(outer, signal.SIGKILL, grace=0)
    text = log.read_text(errors="replace")
    assert took < 2.0, (took, text)
    assert code == 143, text  # the job was not over: retryable
    assert "stop requested (SIGTERM); exiting 143" in text


_WAITS_FOR_A_CHECKPOINT = """
import signal, sys, time
from taas.core import stopping
stopping.install("chief:0")
signal.signal(signal.SIGTERM, lambda *_: None)  # "checkpoint after this step": never comes
stopping.needs(sys.argv[1:])
print("ready", flush=True)
time.sleep(60)
"""


def _stopped_after(peers: list[str], within: float) -> tuple[float | None, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _WAITS_FOR_A_CHECKPOINT, *peers],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        asked = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(within)
        except subprocess.TimeoutExpired:
            return None, ""
        return time.monotonic() - asked, proc.stdout.read()
    finally:
        stop(proc, signal.SIGKILL, grace=0)


def test_a_task_waiting_to_checkpoint_ends_at_once_when_its_peers_are_gone() -> None:
    """A ParameterServerStrategy coordinator given SIGTERM waits (up to 4 s) to save a
    checkpoint, unless the PS tasks it saves from are gone, as when the whole TFJob is deleted
    and every pod gets SIGTERM at once: then it ends as soon as they stop answering."""
    gone = f"127.0.0.1:{free_ports(1)[0]}"  # nothing listens there
    took, output = _stopped_after([gone], within=5)
    assert took is not None and took < 2.0, (took, output)
    assert f"{gone} is gone: no checkpoint can be saved" in output
    assert "stop requested (SIGTERM); exiting 143" in output
    with socket.create_server(("127.0.0.1", 0)) as peer:  # a PS that still answers
        alive = f"127.0.0.1:{peer.getsockname()[1]}"
        took, output = _stopped_after([alive], within=3)
    assert took is None, f"ended after {took}s though its peer answers: {output}"


_SERVES = """
import sys, time
from taas.core import stopping
stopping.install("ps:0")
stopping.serves(sys.argv[1:])
print("ready", flush=True)
time.sleep(60)
"""


def test_a_serving_task_stays_for_its_coordinator_then_leaves_when_it_has_gone() -> None:
    """A ParameterServerStrategy PS or worker given SIGTERM (the whole TFJob deleted) stays while
    its coordinator answers, since the coordinator's last checkpoint needs it, leaves as soon as
    the coordinator has gone, and never stays past SERVE_GRACE_SECONDS."""
    from taas.core.stopping import SERVE_GRACE_SECONDS

    def serving(coordinator: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", _SERVES, coordinator],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        return proc

    with socket.create_server(("127.0.0.1", 0)) as coordinator:
        host = f"127.0.0.1:{coordinator.getsockname()[1]}"
        proc = serving(host)
        try:
            asked = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(2.0)  # the coordinator still answers: it stays
            coordinator.close()  # the coordinator has saved and gone
            gone = time.monotonic()
            assert proc.wait(3.0) == 143
            left = time.monotonic()
        finally:
            stop(proc, signal.SIGKILL, grace=0)
    assert left - gone < 1.5, (left - gone, asked)
    with socket.create_server(("127.0.0.1", 0)) as stays:  # a coordinator that never goes
        proc = serving(f"127.0.0.1:{stays.getsockname()[1]}")
        try:
            asked = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(SERVE_GRACE_SECONDS + 3) == 143
            took = time.monotonic() - asked
        finally:
            stop(proc, signal.SIGKILL, grace=0)
    assert SERVE_GRACE_SECONDS - 0.5 < took < SERVE_GRACE_SECONDS + 1.5, took


def test_a_multi_worker_mirrored_job_stopped_as_a_whole_saves_and_ends_with_143_at_once(
    tmp_path: Path,
) -> None:
    """The TFJob deleted: SIGTERM to every MultiWorkerMirroredStrategy worker at once. They
    agree on a step, save there (collectively) and exit 143 within 5 s, the checkpoint written."""
    model_dir = tmp_path / "model"
    env = {"TAAS_MODEL_DIR": str(model_dir), "TF_MAX_STEPS": "1000000",
           "TAAS_LOG_EVERY_STEPS": "500", "TAAS_SAVE_CHECKPOINTS_SECS": "0"}  # fmt: skip
    cluster = LocalCluster(["examples/keras_digits/keras_digits.py"], tmp_path / "logs",
                           {"worker": 2}, env=env)  # fmt: skip
    codes, took = cluster.stopped_as_a_whole(["worker:0"])
    assert codes == {"worker:0": 143, "worker:1": 143}, (codes, cluster.logs())
    assert took < 5.0, (took, cluster.logs())
    chief = cluster.tasks["worker:0"].text()
    saved = re.search(r"saved checkpoint ckpt-(\d+)", chief)
    assert saved, chief
    assert (model_dir / f"ckpt-{saved.group(1)}.index").exists(), sorted(os.listdir(model_dir))
