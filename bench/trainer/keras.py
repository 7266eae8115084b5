"""TensorFlow 2 sections of `python -m bench.trainer` (taas.KerasTrainer), ratios in one run.

5. overhead: programs/bench_keras.py as a KerasTrainer vs hand-written, one process each,
   interleaved: fit (base class's default) vs plain model.fit, and a custom train(batch) step
   vs a plain tf.function + strategy.run loop; best run's steps/s and the ratios.
6. start-up: `taas run` of examples/keras_digits/mwms.yaml and pss.yaml, each as it is
   (TensorFlow imported in the hooks) and with TensorFlow imported before the program (as a
   program that imports it at its top), from launch to the first "first step done" line, vs a
   bare `python -c "import tensorflow"`; interleaved.
7. scaling (CPU): examples/s of bench_keras (fit) with 1 vs 2 workers under
   MultiWorkerMirroredStrategy (sum of the workers' rates) and ParameterServerStrategy (chief +
   PS + 1 or 2 workers; the coordinator's rate is the job's); interleaved.
8. GPU, only when TensorFlow sees one: bench_keras fit in one process (MirroredStrategy over
   every GPU when there are 2 or more) vs the same with one GPU visible.
9. Keras 3 distributed: time per step of bench_keras in Keras 3 under `taas run`
   MultiWorkerMirroredStrategy (1 and 2 workers: TaaS's own loop, as Keras 3's fit cannot run
   there) vs the same job in tf_keras (fit) and vs plain Keras 3 model.fit in one process;
   interleaved, the chief's rate, medians.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.trainer.procs import QUIET, REPO_ROOT, BenchError, bench_lines, run, taas_run
from bench.trainer.procs import tensorflow_first as first_of

KERAS = "bench/trainer/programs/bench_keras.py"


def _median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2] if values else 0.0


def keras_overhead(rounds: int, steps: int, workdir: Path) -> list[str]:
    modes = ["hand-fit", "base-fit", "hand-custom", "base-custom"]
    rates: dict[str, list[float]] = {mode: [] for mode in modes}
    for r in range(rounds):
        for mode in modes if r % 2 == 0 else modes[::-1]:
            env = {
                **QUIET,
                "BENCH_MODE": mode,
                "TF_MAX_STEPS": str(steps),
                "TF_LOGDIR": str(workdir / f"k-overhead-{mode}-{r}"),
            }
            lines = bench_lines(run([sys.executable, KERAS], env).output)
            if not lines:
                raise BenchError(f"{mode}: no BENCH line")
            rates[mode].append(lines[0]["steps_per_s"])
    best = {mode: max(values) for mode, values in rates.items()}

    def ratio(hand: str, base: str) -> str:
        return f"{best[hand] / best[base] if best[base] else 0:5.2f}x"

    out = [
        f"5. TF2 base-class overhead ({rounds} interleaved rounds x {steps} steps, 1 process; "
        "best run of each; ratio = hand steps/s / base steps/s, so > 1 is the base's cost)"
    ]
    for mode in modes:
        out.append(
            f"   {mode:<12} {best[mode]:9.1f} steps/s  (runs: "
            + ", ".join(f"{v:.0f}" for v in rates[mode])
            + ")"
        )
    out.append(f"   fit:    KerasTrainer costs {ratio('hand-fit', 'base-fit')} plain model.fit")
    out.append(f"   custom: KerasTrainer costs {ratio('hand-custom', 'base-custom')} a plain loop")
    return out


def _first_step_seconds(job: Path, logs: Path, timeout_s: float = 600) -> float:
    """`taas run job` to the end; seconds from launch to the first "first step done" line."""
    taas = Path(sys.executable).with_name("taas")
    exe = [str(taas)] if taas.exists() else [sys.executable, "-m", "taas_operator.cli"]
    cmd = [*exe, "run", str(job), "--logs-dir", str(logs), "--no-color", "--quiet-table"]
    launched = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    first = None
    assert proc.stdout is not None
    for line in proc.stdout:
        if first is None and "first step done" in line:
            first = time.monotonic() - launched
    code = proc.wait(timeout_s)
    if code != 0 or first is None:
        raise BenchError(f"taas run {job.name} exited {code}; first step seen: {first}")
    return first


def _example(path: str, workdir: Path, name: str, tensorflow_first: bool = False) -> Path:
    """The example with its model dir under workdir (never resuming an earlier run); with
    `tensorflow_first`, its program run as one that imports TensorFlow at its top."""
    (doc,) = list(yaml.safe_load_all((REPO_ROOT / path).read_text()))
    for spec in doc["spec"]["tfReplicaSpecs"].values():
        container = spec["template"]["spec"]["containers"][0]
        for entry in container["env"]:
            if entry["name"] == "TF_LOGDIR":
                entry["value"] = str(workdir / name / "model")
        if tensorflow_first:
            container["command"] = first_of(container["command"][-1])
    job = workdir / name / "job.yaml"
    job.parent.mkdir(parents=True, exist_ok=True)
    job.write_text(yaml.safe_dump(doc, sort_keys=False))
    return job


def keras_startup(rounds: int, workdir: Path) -> list[str]:
    examples = {
        "mwms": ("examples/keras_digits/mwms.yaml", False),
        "mwms, TF imported first": ("examples/keras_digits/mwms.yaml", True),
        "pss": ("examples/keras_digits/pss.yaml", False),
        "pss, TF imported first": ("examples/keras_digits/pss.yaml", True),
    }
    imports: list[float] = []
    firsts: dict[str, list[float]] = {name: [] for name in examples}
    for r in range(rounds):
        imports.append(run([sys.executable, "-c", "import tensorflow"]).seconds)
        order = list(examples) if r % 2 == 0 else list(examples)[::-1]
        for name in order:
            path, first = examples[name]
            slug = name.replace(", ", "-").replace(" ", "-")
            job = _example(path, workdir, f"k-startup-{slug}-{r}", first)
            firsts[name].append(_first_step_seconds(job, job.parent / "logs"))
    imp = _median(imports)
    out = [
        f"6. TF2 start-up ({rounds} interleaved rounds, medians; PS and workers of "
        "ParameterServerStrategy serve without TensorFlow's Python API unless the program "
        "imported it first)",
        f"   python -c 'import tensorflow'                          {imp:6.2f} s",
    ]
    for name in examples:
        first = _median(firsts[name])
        out.append(
            f"   taas run {name:<24} -> first step  {first:6.2f} s   "
            f"{first / imp if imp else 0:5.2f}x the import"
        )
    return out


def _tfjob(name: str, shape: dict[str, int], env: dict[str, str]) -> str:
    container = {
        "name": "tensorflow",
        "image": "local",
        "command": ["python", KERAS],
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }
    replica = {"restartPolicy": "Never", "template": {"spec": {"containers": [container]}}}
    specs: dict[str, Any] = {kind: {"replicas": n, **replica} for kind, n in shape.items()}
    return yaml.safe_dump(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {"name": name},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"}, "tfReplicaSpecs": specs},
        }
    )


def keras_scaling(rounds: int, steps: int, workdir: Path) -> list[str]:
    shapes = {
        ("MultiWorkerMirroredStrategy", 1): {"Worker": 1},
        ("MultiWorkerMirroredStrategy", 2): {"Worker": 2},
        ("ParameterServerStrategy", 1): {"Chief": 1, "PS": 1, "Worker": 1},
        ("ParameterServerStrategy", 2): {"Chief": 1, "PS": 1, "Worker": 2},
    }
    rates: dict[tuple[str, int], list[float]] = {key: [] for key in shapes}
    keys = list(shapes)
    for r in range(rounds):
        for key in keys if r % 2 == 0 else keys[::-1]:
            name = f"k-scale-{'mwms' if key[0].startswith('Multi') else 'pss'}-{key[1]}w-{r}"
            env = {**QUIET, "BENCH_MODE": "base-fit", "TF_MAX_STEPS": str(steps)}
            env["TF_LOGDIR"] = str(workdir / name / "model")
            _, _, logs = taas_run(_tfjob(name, shapes[key], env), workdir / name)
            lines = [line for text in logs.values() for line in bench_lines(text)]
            if not lines:
                raise BenchError(f"scaling {key}: no BENCH line")
            rates[key].append(sum(line["examples_per_s"] for line in lines))
    out = [
        f"7. TF2 scaling on CPU (fit, {rounds} interleaved rounds, {steps} steps, medians; "
        "2 cores for every process)"
    ]
    for strategy in ("MultiWorkerMirroredStrategy", "ParameterServerStrategy"):
        one, two = _median(rates[(strategy, 1)]), _median(rates[(strategy, 2)])
        out.append(
            f"   {strategy:<28} 1 worker {one:9.0f} ex/s   2 workers {two:9.0f} ex/s   "
            f"{two / one if one else 0:.2f}x"
        )
    return out


def keras_gpu(rounds: int, steps: int, workdir: Path, gpus: int) -> list[str]:
    if not gpus:
        return ["8. TF2 GPU: no GPU visible to TensorFlow here; section not run"]
    rates: dict[str, list[float]] = {"1 GPU": [], f"{gpus} GPUs": []}
    strategy = ""
    for _ in range(rounds):
        for label in rates:
            env = {**QUIET, "BENCH_MODE": "base-fit", "TF_MAX_STEPS": str(steps)}
            env["TF_LOGDIR"] = tempfile.mkdtemp(dir=workdir)
            if label == "1 GPU":
                env["TAAS_VISIBLE_DEVICES"] = "0"
            lines = bench_lines(run([sys.executable, KERAS], {**os.environ, **env}).output)
            rates[label].append(lines[0]["examples_per_s"])
            if label != "1 GPU":
                strategy = lines[0].get("strategy", "")
    one, many = _median(rates["1 GPU"]), _median(rates[f"{gpus} GPUs"])
    return [
        f"8. TF2 GPU ({gpus} visible; fit, one process, {rounds} rounds, medians)",
        f"   1 GPU visible         {one:9.0f} examples/s",
        f"   all {gpus} GPU(s) ({strategy})  {many:9.0f} examples/s   "
        f"{many / one if one else 0:.2f}x",
    ]


def _step_seconds(lines: list[dict[str, Any]], what: str) -> float:
    """Seconds per step of the first BENCH line (the chief's under `taas run`: its task sorts
    first), after checking it ran in the strategy meant."""
    if not lines:
        raise BenchError(f"{what}: no BENCH line")
    line = sorted(lines, key=lambda found: found["task"])[0]
    if not line["steps_per_s"]:
        raise BenchError(f"{what}: no timed steps ({line})")
    return 1.0 / line["steps_per_s"]


#: MultiWorkerMirroredStrategy's class; what a Keras 3 task prints when TaaS's loop runs it.
MWMS = "CollectiveAllReduceStrategy"
OWN_LOOP = "steps: Keras 3 train_step through TaaS's own fit"


def keras3_distributed(rounds: int, steps: int, workdir: Path) -> list[str]:
    runs = [("keras3", 1), ("tf_keras", 1), ("keras3", 2), ("tf_keras", 2), ("keras3", 0)]
    seconds: dict[tuple[str, int], list[float]] = {key: [] for key in runs}
    for r in range(rounds):
        for keras, workers in runs if r % 2 == 0 else runs[::-1]:
            env = {**QUIET, "BENCH_KERAS": keras, "TF_MAX_STEPS": str(steps)}
            what = f"{keras} {workers or 'one process'}"
            if not workers:  # plain Keras 3 fit, no TaaS
                env["BENCH_MODE"] = "hand-fit"
                found = bench_lines(run([sys.executable, KERAS], env).output)
            else:
                name = f"k3-{keras.replace('_', '-')}-{workers}w-{r}"
                env.update(BENCH_MODE="base-fit", TF_LOGDIR=str(workdir / name / "model"))
                _, _, logs = taas_run(_tfjob(name, {"Worker": workers}, env), workdir / name)
                found = [line for text in logs.values() for line in bench_lines(text)]
                own = all(OWN_LOOP in text for text in logs.values())
                if {line["strategy"] for line in found} != {MWMS} or own != (keras == "keras3"):
                    raise BenchError(f"{what}: not the run meant: {found}, own loop: {own}")
            seconds[(keras, workers)].append(_step_seconds(found, what))
    med = {key: _median(values) for key, values in seconds.items()}
    plain = med[("keras3", 0)]
    out = [
        f"9. Keras 3 distributed ({rounds} interleaved rounds x {steps} steps, medians of the "
        "chief's time per step; Keras 3 under MultiWorkerMirroredStrategy runs TaaS's own loop)",
        f"   plain Keras 3 model.fit, one process        {plain * 1e3:8.2f} ms/step",
    ]
    for workers in (1, 2):
        k3, k2 = med[("keras3", workers)], med[("tf_keras", workers)]
        out.append(
            f"   MWMS {workers} worker(s): Keras 3 {k3 * 1e3:8.2f} ms/step, tf_keras fit "
            f"{k2 * 1e3:8.2f} ms/step; Keras 3 / tf_keras {k3 / k2:5.2f}x, "
            f"Keras 3 / plain Keras 3 {k3 / plain:5.2f}x"
        )
    return out
