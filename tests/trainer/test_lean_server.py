"""Tasks that only serve start without TensorFlow's Python API when the program has not imported
it (`taas.runtime.lean_server`): a graph-mode PS, and the PS and workers of a TensorFlow 2
ParameterServerStrategy job. Real TensorFlow processes on 127.0.0.1: the job trains as on the
full path (the same "done" protocol: every server exits 0 at the end), a lean PS stopped while
serving stopped alone ends a bounded time after SIGTERM with 143 (stopped with its chief, once
the chief has saved), and a program that imports TensorFlow at its top
serves the full way, as before."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from taas_operator.processes import spawn, stop
from tests.trainer.trainer_harness import REPO, LocalCluster

pytestmark = [pytest.mark.tensorflow, pytest.mark.timeout(300)]
LEAN = "(lean: without TensorFlow's Python API)"


def test_a_graph_mode_ps_serves_lean_and_the_job_trains(tmp_path: Path) -> None:
    env = {"TAAS_MODEL_DIR": str(tmp_path / "model"), "TF_MAX_STEPS": "200",
           "TAAS_LEARNING_RATE": "0.1"}  # fmt: skip
    cluster = LocalCluster(["tests/trainer/programs/lazy_regression.py"], tmp_path / "logs",
                           {"ps": 1, "worker": 2}, env=env)  # fmt: skip
    try:
        cluster.start_all()
        codes = cluster.wait(240)
    finally:
        cluster.close()
    assert codes == {"ps:0": 0, "worker:0": 0, "worker:1": 0}, cluster.logs()
    ps = cluster.tasks["ps:0"].text()
    assert LEAN in ps and "all trainer tasks done; exiting" in ps, ps
    learned = re.search(r"\[worker:0\] learned w=([0-9.-]+) b=([0-9.-]+)", cluster.logs())
    assert learned and abs(float(learned.group(1)) - 2) < 0.2, cluster.logs()
    assert "[worker:0] tensorflow imported: True" in cluster.logs()


def test_a_lean_ps_stopped_alone_stays_for_its_chief_only_a_bounded_time(tmp_path: Path) -> None:
    """SIGTERM to the PS alone (its pod deleted) while the chief trains: the PS stays for the
    chief's checkpoint a bounded time (it cannot tell a stop of the whole job from its own),
    then ends with 143; never the pod's whole grace period."""
    from taas.core.stopping import SERVE_GRACE_SECONDS

    env = {"TAAS_MODEL_DIR": str(tmp_path / "model"), "TF_MAX_STEPS": "100000",
           "TEST_STEP_SLEEP": "0.05"}  # fmt: skip
    cluster = LocalCluster(["tests/trainer/programs/lazy_regression.py"], tmp_path / "logs",
                           {"ps": 1, "worker": 1}, env=env)  # fmt: skip
    try:
        cluster.start_all()
        cluster.wait_for_line("ps:0", LEAN, timeout=120)
        cluster.wait_for_line("worker:0", "first step done", timeout=120)
        ps = cluster.tasks["ps:0"].proc
        asked = time.monotonic()
        ps.send_signal(signal.SIGTERM)
        code = ps.wait(30)
        took = time.monotonic() - asked
    finally:
        cluster.close()
    text = cluster.tasks["ps:0"].text()
    assert took < SERVE_GRACE_SECONDS + 1.5 and code == 143, (took, code, text)
    assert "stop requested (SIGTERM); exiting 143" in text


def test_a_graph_mode_job_stopped_as_a_whole_saves_and_ends_with_143_at_once(
    tmp_path: Path,
) -> None:
    """The TFJob deleted: SIGTERM to the PS and both workers at once, mid-training (async).
    The chief saves a checkpoint after its step (the PS stays until the chief has gone), and
    every task exits 143 within 5 s, the checkpoint there to resume from."""
    model_dir = tmp_path / "model"
    env = {"TAAS_MODEL_DIR": str(model_dir), "TF_MAX_STEPS": "100000",
           "TEST_STEP_SLEEP": "0.02", "TAAS_SAVE_CHECKPOINTS_SECS": "0"}  # fmt: skip
    cluster = LocalCluster(["tests/trainer/programs/lazy_regression.py"], tmp_path / "logs",
                           {"ps": 1, "worker": 2}, env=env)  # fmt: skip
    codes, took = cluster.stopped_as_a_whole(["worker:0", "worker:1"])
    assert codes == dict.fromkeys(codes, 143) and len(codes) == 3, (codes, cluster.logs())
    assert took < 5.0, (took, cluster.logs())
    chief = cluster.tasks["worker:0"].text()
    saved = re.search(r"saved checkpoint model\.ckpt-(\d+)", chief)
    assert saved and "SIGTERM: stopped after a checkpoint at global step" in chief, chief
    assert (model_dir / f"model.ckpt-{saved.group(1)}.index").exists(), os.listdir(model_dir)


def test_parameter_server_strategy_serves_lean_unless_tensorflow_comes_first(
    tmp_path: Path,
) -> None:
    env = {"TF_MAX_STEPS": "100", "TAAS_BATCH_SIZE": "64", "TAAS_LEARNING_RATE": "0.01"}
    shape = {"chief": 1, "ps": 1, "worker": 1}
    runs = {
        "lean": ["examples/keras_digits/keras_digits.py"],
        "full": ["-c", "import tensorflow, runpy; runpy.run_path("
                 "'examples/keras_digits/keras_digits.py', run_name='__main__')"],
    }  # fmt: skip
    for how, script in runs.items():
        env["TAAS_MODEL_DIR"] = str(tmp_path / how / "model")
        cluster = LocalCluster(script, tmp_path / how, shape, env=env)
        try:
            cluster.start_all()
            codes = cluster.wait(240)
        finally:
            cluster.close()
        assert set(codes.values()) == {0}, cluster.logs()
        for server in ("ps:0", "worker:0"):
            text = cluster.tasks[server].text()
            assert "all coordinator tasks done; exiting" in text, text
            assert (LEAN in text) == (how == "lean"), text
        assert "test accuracy" in cluster.tasks["chief:0"].text(), cluster.logs()


def _tensorflow_loaded(pid: int) -> bool:
    """Whether the process has TensorFlow's runtime library mapped."""
    return "libtensorflow_framework" in Path(f"/proc/{pid}/maps").read_text()


def test_an_evaluator_imports_tensorflow_only_once_there_is_a_checkpoint(tmp_path: Path) -> None:
    """Started with the job, a TF2 evaluator has nothing to do before the first checkpoint: it
    waits for it without TensorFlow (leaving the CPU to the trainers' start), then evaluates
    every checkpoint up to max_steps as before."""
    model_dir = tmp_path / "model"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TAAS_MODEL_DIR": str(model_dir),
           "TF_MAX_STEPS": "100", "TAAS_SAVE_CHECKPOINTS_STEPS": "50"}  # fmt: skip
    config = '{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "evaluator", "index": 0}}'
    program = [sys.executable, "examples/keras_digits/keras_digits.py"]
    log = tmp_path / "evaluator.log"
    with log.open("wb") as out:
        evaluator = spawn(program, env={**env, "TF_CONFIG": config}, cwd=REPO, stdout=out)
    try:
        time.sleep(4)
        assert evaluator.poll() is None, log.read_text()
        assert not _tensorflow_loaded(evaluator.pid), "TensorFlow loaded before a checkpoint"
        trained = subprocess.run(program, env=env, cwd=REPO, capture_output=True, timeout=240)
        assert trained.returncode == 0, trained.stderr[-2000:]
        assert evaluator.wait(120) == 0, log.read_text()
    finally:
        stop(evaluator, signal.SIGKILL, grace=0)
    evaluated = re.findall(r"evaluated ckpt-(\d+) \(global step \d+\) accuracy", log.read_text())
    assert evaluated and int(evaluated[-1]) == 100, log.read_text()


def test_a_parameter_server_job_stopped_as_a_whole_saves_and_ends_with_143_at_once(
    tmp_path: Path,
) -> None:
    """What deleting the TFJob does: SIGTERM to every task at once, mid-training. The PS and the
    workers stay while the coordinator still runs (its step in flight ends on the workers, its
    checkpoint reads the PS's variables), the coordinator saves at the step it is at and leaves,
    then they leave: every task exits 143 within 3 s, and the checkpoint is there to resume."""
    model_dir = tmp_path / "model"
    env = {"TAAS_MODEL_DIR": str(model_dir), "TF_MAX_STEPS": "1000000",
           "TAAS_LOG_EVERY_STEPS": "500", "TAAS_SAVE_CHECKPOINTS_SECS": "0"}  # fmt: skip
    cluster = LocalCluster(["examples/keras_digits/keras_digits.py"], tmp_path / "logs",
                           {"chief": 1, "ps": 1, "worker": 2}, env=env)  # fmt: skip
    codes, took = cluster.stopped_as_a_whole(["chief:0"])
    assert codes == dict.fromkeys(codes, 143) and len(codes) == 4, (codes, cluster.logs())
    assert took < 3.0, (took, cluster.logs())
    chief = cluster.tasks["chief:0"].text()
    saved = re.search(r"saved checkpoint ckpt-(\d+)", chief)
    assert saved and "SIGTERM: stopped after a checkpoint at global step" in chief, chief
    assert (model_dir / f"ckpt-{saved.group(1)}.index").exists(), sorted(os.listdir(model_dir))


def _ps_without(hidden: Path, cluster: LocalCluster, env: dict[str, str], log: Path) -> Any:
    """The PS in a mount namespace where `hidden` is an empty tmpfs (that directory only: a
    tmpfs over all of /tmp also hid a checkout and its venv under /tmp, and no PS ran)."""
    hide = ["unshare", "--mount", "sh", "-c", 'mount -t tmpfs none "$0" && exec "$@"', str(hidden)]
    ps_env = {**os.environ, **env, "TF_CONFIG": cluster.tf_config("ps", 0)}
    with log.open("ab") as out:
        return spawn([*hide, sys.executable, "examples/keras_digits/keras_digits.py"],
                     env=ps_env, cwd=REPO, stdout=out)  # fmt: skip


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root")
def test_parameter_server_checkpoints_need_no_model_dir_on_the_ps(tmp_path: Path) -> None:
    """On a cluster each pod has its own filesystem: the chief's model_dir (a directory of its
    container, as in examples/keras_digits/pss.yaml) does not exist for the PS. The PS runs
    here where the test's directory is an empty tmpfs (a mount namespace), without the chief's
    model_dir; the checkpoints are still written, and read back when the job runs again, by the
    coordinator."""
    model_dir = tmp_path / "model"
    env = {"TAAS_MODEL_DIR": str(model_dir), "TF_MAX_STEPS": "120",
           "TAAS_SAVE_CHECKPOINTS_STEPS": "50"}  # fmt: skip
    cluster = LocalCluster(["examples/keras_digits/keras_digits.py"], tmp_path / "logs",
                           {"chief": 1, "ps": 1, "worker": 1}, env=env)  # fmt: skip
    for max_steps in ("120", "170"):  # then again, from the last checkpoint
        env["TF_MAX_STEPS"] = cluster.env["TF_MAX_STEPS"] = max_steps
        ps = _ps_without(tmp_path, cluster, env, tmp_path / "ps.log")  # opened before hiding
        try:
            cluster.start("worker", 0)
            cluster.start("chief", 0)
            try:
                codes = cluster.wait(240)
            except AssertionError as err:  # the PS's own log too: it is not one of the cluster's
                ps_log = (tmp_path / "ps.log").read_text()
                raise AssertionError(f"{err}\n===== ps:0\n{ps_log}") from None
            assert ps.wait(60) == 0, (tmp_path / "ps.log").read_text()
        finally:
            stop(ps, signal.SIGKILL, grace=0)
            cluster.close()
        assert codes == {"worker:0": 0, "chief:0": 0}, cluster.logs()
    chief = cluster.tasks["chief:0"].text()
    assert "saved checkpoint ckpt-" in chief and "test accuracy" in chief, chief
    resumed = re.search(r"resuming from checkpoint \S+ckpt-(\d+) \(global step (\d+)\)", chief)
    assert resumed and int(resumed.group(2)) >= 100, chief
