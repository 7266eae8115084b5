"""Real multi-process TensorFlow clusters on 127.0.0.1: training, sync, placement, faults, codes.

Every task is a real process with a Kubeflow-style TF_CONFIG, talking gRPC on free ports; nothing
is mocked. Faults are real SIGKILLs of a task's process group, then a restart of the same task
(what the operator's ExitCode policy does by recreating the pod).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.trainer.trainer_harness import LocalCluster, free_ports, run_program

pytestmark = pytest.mark.tensorflow

MNIST = ["examples/mnist/mnist.py"]
PACED = ["tests/trainer/programs/paced_regression.py"]
ACCURACY = 0.90  # digits test split after 300 global steps (typically 0.96-0.99)


def _cluster(tmp_path: Path, script: list[str], shape: dict[str, int], **env: str) -> LocalCluster:
    base = {"TAAS_MODEL_DIR": str(tmp_path / "model"), "TAAS_STARTUP_TIMEOUT_SECS": "120"}
    return LocalCluster(script, tmp_path / "logs", shape, env={**base, **env})


def _accuracy(text: str) -> float:
    match = re.search(r"test accuracy: ([0-9.]+)", text)
    assert match, text
    return float(match.group(1))


def _final_global(text: str) -> int:
    return int(re.findall(r"training done: \d+ local steps, global step (\d+)", text)[-1])


def _local_steps(text: str) -> int:
    return int(re.findall(r"training done: (\d+) local steps", text)[-1])


@pytest.mark.timeout(150)
@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_mnist_one_ps_two_workers(tmp_path: Path, sync: bool) -> None:
    """Reaches max steps, accuracy above the threshold, every task (PS too) exits 0.

    Sync: the global step only moves once ``replicas_to_aggregate`` (= 2 workers) gradients are
    in, so the workers' local steps add up to at least 2 x the global steps.
    """
    max_steps = 300
    cluster = _cluster(
        tmp_path,
        MNIST,
        {"ps": 1, "worker": 2},
        TAAS_SYNC=str(sync).lower(),
        TF_MAX_STEPS=str(max_steps),
        TAAS_LEARNING_RATE="0.01",
    )
    try:
        cluster.start_all()
        codes = cluster.wait(120)
        assert codes == {"ps:0": 0, "worker:0": 0, "worker:1": 0}, cluster.logs()
        chief = cluster.tasks["worker:0"].text()
        assert _accuracy(chief) > ACCURACY
        assert "all trainer tasks done" in cluster.tasks["ps:0"].text()
        finals = [_final_global(cluster.tasks[f"worker:{i}"].text()) for i in range(2)]
        assert max(finals) >= max_steps
        local = [_local_steps(cluster.tasks[f"worker:{i}"].text()) for i in range(2)]
        if sync:
            assert max(finals) <= max_steps + 1
            assert sum(local) >= 2 * max_steps, (local, finals)
            assert sum(local) <= 2 * max_steps + 6, (local, finals)
        else:  # async: global step = sum of every worker's steps
            assert abs(sum(local) - max(finals)) <= 2, (local, finals)
    finally:
        cluster.close()


@pytest.mark.timeout(200)
def test_two_ps_placement_and_worker_restart(tmp_path: Path) -> None:
    """2 PS: variables round-robin on both. A worker killed mid-run and restarted rejoins at the
    current global step (state lives on the PS), training reaches max steps, all exit 0."""
    max_steps = 400
    cluster = _cluster(
        tmp_path,
        PACED,
        {"ps": 2, "worker": 2},
        TF_MAX_STEPS=str(max_steps),
        TAAS_LEARNING_RATE="0.1",
        TEST_STEP_SLEEP="0.02",
        TAAS_LOG_EVERY_STEPS="20",
    )
    try:
        cluster.start_all()
        cluster.wait_for_line("worker:1", "step 40 global", 90)
        cluster.kill("worker:1")
        cluster.start("worker", 1)
        codes = cluster.wait(150)
        assert codes == {"ps:0": 0, "ps:1": 0, "worker:0": 0, "worker:1": 0}, cluster.logs()
        restarted = cluster.tasks["worker:1"].text()
        joins = [int(s) for s in re.findall(r"session ready .* global step (\d+)", restarted)]
        assert len(joins) == 2 and joins[1] > 40, restarted
        assert (
            max(_final_global(t.text()) for n, t in cluster.tasks.items() if "worker" in n)
            >= max_steps
        )
        placement = dict(re.findall(r"placement (\S+) (\S+)", cluster.tasks["worker:0"].text()))
        devices = {d for d in placement.values()}
        assert "/job:ps/task:0" in devices and "/job:ps/task:1" in devices, placement
        assert "learned w=2.0" in cluster.tasks["worker:0"].text() or "learned w=1.9" in (
            cluster.tasks["worker:0"].text()
        )
    finally:
        cluster.close()


@pytest.mark.timeout(200)
def test_chief_killed_and_restarted_resumes_from_checkpoint(tmp_path: Path) -> None:
    """The chief dies after a checkpoint; the restarted chief restores it and the job finishes."""
    max_steps = 400
    model_dir = tmp_path / "model"
    cluster = _cluster(
        tmp_path,
        PACED,
        {"ps": 1, "worker": 2},
        TF_MAX_STEPS=str(max_steps),
        TAAS_LEARNING_RATE="0.1",
        TEST_STEP_SLEEP="0.02",
        TAAS_SAVE_CHECKPOINTS_STEPS="50",
        TAAS_LOG_EVERY_STEPS="20",
    )
    try:
        cluster.start_all()
        cluster.wait_for_line("worker:0", "step 60 global", 90)
        assert (model_dir / "checkpoint").exists()
        cluster.kill("worker:0")
        cluster.start("worker", 0)
        codes = cluster.wait(150)
        assert codes == {"ps:0": 0, "worker:0": 0, "worker:1": 0}, cluster.logs()
        chief = cluster.tasks["worker:0"].text()
        assert "resuming from checkpoint" in chief, chief
        joins = [int(s) for s in re.findall(r"session ready .* global step (\d+)", chief)]
        assert len(joins) == 2 and joins[1] >= 50, chief
        finals = [_final_global(cluster.tasks[f"worker:{i}"].text()) for i in range(2)]
        assert max(finals) >= max_steps
    finally:
        cluster.close()


@pytest.mark.timeout(100)
def test_broken_subclass_exits_1_with_traceback(tmp_path: Path) -> None:
    result = run_program(
        ["tests/trainer/programs/broken_model.py"], {"TAAS_MODEL_DIR": str(tmp_path)}
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" in result.stderr and "ZeroDivisionError" in result.stderr
    assert "broken_model.py" in result.stderr


@pytest.mark.timeout(100)
def test_unreachable_ps_exits_retryable(tmp_path: Path) -> None:
    ps, worker = free_ports(2)
    tf_config = {
        "cluster": {"ps": [f"127.0.0.1:{ps}"], "worker": [f"127.0.0.1:{worker}"]},
        "task": {"type": "worker", "index": 0},
    }
    result = run_program(
        MNIST,
        {
            "TF_CONFIG": json.dumps(tf_config),
            "TAAS_STARTUP_TIMEOUT_SECS": "2",
            "TAAS_MODEL_DIR": str(tmp_path),
        },
    )
    assert result.returncode == 138, result.stderr
    assert f"ps:0 at 127.0.0.1:{ps} unreachable" in result.stderr
    assert "retryable" in result.stderr


@pytest.mark.timeout(100)
def test_bad_setting_exits_2_naming_it(tmp_path: Path) -> None:
    result = run_program(
        MNIST, {"TF_SAVE_SUMMARIES_STEPS": "often", "TAAS_MODEL_DIR": str(tmp_path)}
    )
    assert result.returncode == 2, result.stderr
    assert "save_summaries_steps" in result.stderr and "TF_SAVE_SUMMARIES_STEPS" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.timeout(100)
def test_caicloud_port_runs_unchanged_and_exports(tmp_path: Path) -> None:
    """The old-style subclass (own train op, returns the optimizer) trains and exports."""
    export = tmp_path / "export"
    result = run_program(
        [
            "examples/caicloud_mnist/mnist.py",
            "--max_steps=300",
            f"--logdir={tmp_path / 'm'}",
            f"--export_dir={export}",
            f"--work_dir={tmp_path / 'data'}",
        ],
        {},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    accuracy = float(re.search(r"Accuracy for Test Data: ([0-9.]+)", result.stdout).group(1))
    assert accuracy > ACCURACY
    assert (export / "saved_model.pb").exists()


@pytest.mark.timeout(150)
def test_rerun_on_finished_model_dir_says_nothing_to_train(tmp_path: Path) -> None:
    """Re-running a job whose model dir is already at max_steps (``taas run`` twice): every
    trainer prints one "nothing to train" line naming the dir and the fix, trains no step, and
    every task, the PS included, exits 0. The finished checkpoint comes from a one-process run."""
    max_steps = 20
    model_dir = tmp_path / "model"
    first = run_program(PACED, {"TAAS_MODEL_DIR": str(model_dir), "TF_MAX_STEPS": str(max_steps)})
    assert first.returncode == 0, first.stdout + first.stderr
    assert "nothing to train" not in first.stdout
    cluster = _cluster(tmp_path, PACED, {"ps": 1, "worker": 2}, TF_MAX_STEPS=str(max_steps))
    try:
        cluster.start_all()
        codes = cluster.wait(120)
        assert codes == {"ps:0": 0, "worker:0": 0, "worker:1": 0}, cluster.logs()
        line = (
            f"model dir {model_dir} already at global step {max_steps} >= max_steps {max_steps}: "
            "nothing to train (resumed from checkpoint). Delete the directory or raise "
            "TF_MAX_STEPS"
        )
        for name in ("worker:0", "worker:1"):
            text = cluster.tasks[name].text()
            assert text.count(line) == 1, text
            assert _local_steps(text) == 0 and _final_global(text) == max_steps, text
        assert "resuming from checkpoint" in cluster.tasks["worker:0"].text()
        assert "all trainer tasks done" in cluster.tasks["ps:0"].text()
    finally:
        cluster.close()


@pytest.mark.timeout(100)
def test_misspelled_flags_exit_2_with_close_matches(tmp_path: Path) -> None:
    """A near miss of a TaaS setting or of the program's own absl flag is rejected, naming the
    flag, the close match and --help; before any training (no model dir written)."""
    result = run_program(
        [*MNIST, "--max_step=5", "--hiden_units=8", "--sycn"], {"TAAS_MODEL_DIR": str(tmp_path)}
    )
    assert result.returncode == 2, result.stdout + result.stderr
    err = result.stderr
    assert "unknown flag --max_step: did you mean --max_steps?" in err
    assert "unknown flag --hiden_units: did you mean --hidden_units?" in err
    assert "unknown flag --sycn: did you mean --sync?" in err
    assert "--help" in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())
