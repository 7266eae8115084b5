"""`taas run`'s terminal without TensorFlow's noise (TF 2.21's real lines): start-up notices and
a ParameterServerStrategy chief's lost-worker lines are noted once; errors still show; the log
file keeps every line."""

from __future__ import annotations

import io
from pathlib import Path

from taas_operator.local.display import RunDisplay

STARTUP = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1796205363.669729   31461 port.cc:153] oneDNN custom operations are on. You "
    "may see slightly different numerical results due to floating-point round-off errors.",
    "I0000 00:00:1796205363.674289   31461 cudart_stub.cc:31] Could not find cuda drivers on "
    "your machine, GPU will not be used.",
    "I0000 00:00:1796205363.832199   31461 cpu_feature_guard.cc:227] This TensorFlow binary is "
    "optimized to use available CPU instructions in performance-critical operations.",
    "To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild "
    "TensorFlow with the appropriate compiler flags.",
]
CUINIT = (
    "E0000 00:00:1796205374.387682   31461 cuda_platform.cc:52] failed call to cuInit: "
    "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)"
)
REMOTE = (
    "E0000 00:00:1796205374.1 31461 context_distributed_manager.cc:1] Failed to register "
    "function remotely due to function_name: __inference_step_42 Unavailable: worker 1"
)


def _run(lines: list[tuple[str, str]], tmp_path: Path) -> str:
    out = io.StringIO()
    display = RunDisplay(out, color=False, live=False, logs_dir=str(tmp_path))
    for pod, text in lines:
        display.line("job", pod, (text + "\n").encode())
    display.close()
    return out.getvalue()


def test_startup_notices_twice_per_replica_become_two_notes(tmp_path: Path) -> None:
    shown = _run(
        [(pod, text) for pod in ("w-0", "w-1") for text in [*STARTUP, *STARTUP, CUINIT]]
        + [("w-0", "[worker:0] step 10 loss 0.5")],
        tmp_path,
    )
    assert "oneDNN custom" not in shown and "cuInit" not in shown and "absl" not in shown
    assert shown.count("start-up notices") == 1
    assert shown.count("no CUDA driver on this machine") == 2  # once per replica
    assert "[worker:0] step 10 loss 0.5" in shown
    kept = (tmp_path / "w-0.log").read_text()
    assert kept.count("oneDNN custom operations") == 2 and "cuInit" in kept


def test_cuinit_without_tensorflows_no_driver_notice_shows(tmp_path: Path) -> None:
    assert "failed call to cuInit" in _run([("w-0", CUINIT)], tmp_path)


def test_lost_worker_lines_show_once_with_why(tmp_path: Path) -> None:
    shown = _run([("chief-0", REMOTE)] * 118 + [("chief-0", "Traceback: a real error")], tmp_path)
    assert shown.count("Failed to register function remotely due to") == 1
    assert shown.count("a worker is unreachable") == 1
    assert "Traceback: a real error" in shown
    assert (tmp_path / "chief-0.log").read_text().count("Failed to register") == 118
