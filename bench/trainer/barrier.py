"""`python -m bench.trainer.barrier`: `taas run` of MultiWorkerMirroredStrategy jobs that end at
a barrier, many times over: every run must end Succeeded with exit 0.

    python -m bench.trainer.barrier              # 50 runs of examples/keras_digits/mwms.yaml
    python -m bench.trainer.barrier --runs 5     # a quick look

MultiWorkerMirroredStrategy workers leave together (a barrier of TensorFlow's coordination
service, then every worker exits at once), the moment `taas run` once took for "no replica is
running and nothing more will start" (issue 33). The job is the example without its evaluator,
with fewer steps and its model directory in a fresh temporary directory per run. Slow (tens of
seconds a run on 2 cores), so it lives here and not in the tests; `tests/local/test_local_exits.py`
makes the same exit order happen deterministically. Exit 0 when every run Succeeded, 1 otherwise.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bench.harness.table import figure

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "keras_digits" / "mwms.yaml"
STEPS = "60"


def _job(directory: Path) -> Path:
    """The example, its evaluator left out, fewer steps, its model dir under `directory`."""
    (doc,) = list(yaml.safe_load_all(EXAMPLE.read_text()))
    specs = doc["spec"]["tfReplicaSpecs"]
    specs.pop("Evaluator", None)
    for spec in specs.values():
        for container in spec["template"]["spec"]["containers"]:
            for entry in container.get("env") or []:
                if entry["name"] == "TF_MAX_STEPS":
                    entry["value"] = STEPS
                elif entry["name"] == "TF_LOGDIR":
                    entry["value"] = str(directory / "model")
    path = directory / "mwms.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _run_once(index: int) -> tuple[int, float, str]:
    """(exit code, seconds, the output's tail) of one `taas run`."""
    with tempfile.TemporaryDirectory(prefix=f"taas-barrier-{index}-") as tmp:
        job = _job(Path(tmp))
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "taas_operator.cli", "run", str(job), "--no-color",
             "--quiet-table"],
            cwd=REPO, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        took = time.monotonic() - started
    succeeded = "successfully completed" in done.stdout
    code = done.returncode if succeeded or done.returncode else 1
    return code, took, (done.stdout + done.stderr)[-3000:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.trainer.barrier")
    parser.add_argument("--runs", type=int, default=50, help="runs of the job (default 50)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be 1 or more")
    codes: dict[int, int] = {}
    seconds: list[float] = []
    for index in range(args.runs):
        code, took, tail = _run_once(index)
        codes[code] = codes.get(code, 0) + 1
        seconds.append(took)
        if code != 0:
            print(f"run {index}: exit {code}\n{tail}", flush=True)
    print("exit code  runs")
    for code, count in sorted(codes.items()):
        print(f"{code:>9}  {count:>4}")
    median = sorted(seconds)[len(seconds) // 2]
    print(f"{args.runs} runs, median {figure(median)} s a run")
    return 0 if set(codes) == {0} else 1


if __name__ == "__main__":
    raise SystemExit(main())
