"""Every TFJob YAML under examples/ runs to Succeeded through `taas run` (real TensorFlow
processes on 127.0.0.1: 1 PS + 2 workers for the MNIST and seed-style examples).

Examples are found by globbing, so new ones are covered as they land; each must print its
result line (``RESULTS``), and a run without it fails. An example created suspended (a Kueue
queue admits it in a cluster) is refused by `taas run` with that reason instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.local.local_harness import REPO, condition, final_status, fresh_copy, run_taas

pytestmark = [pytest.mark.tensorflow, pytest.mark.timeout(240)]


def example_jobs(suspended: bool = False) -> list[tuple[str, str]]:
    """(path relative to the repo, TFJob name) of every example TFJob (created suspended, with
    `suspended`: waiting for a queue to admit it)."""
    found = []
    for path in sorted(REPO.glob("examples/*/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "TFJob":
                policy = (doc.get("spec") or {}).get("runPolicy") or {}
                if bool(policy.get("suspend")) == suspended:
                    found.append((str(path.relative_to(REPO)), doc["metadata"]["name"]))
    return found


EXAMPLES = example_jobs()
QUEUED = example_jobs(suspended=True)

ACCURACY = r"test accuracy: ([0-9.]+)"
# The line each example prints with its result, and what that result must satisfy. A new
# example needs an entry: its test fails until it says what "trained" means for it.
RESULTS: dict[str, tuple[str, Callable[[float], bool]]] = {
    "examples/mnist/async.yaml": (ACCURACY, lambda accuracy: accuracy > 0.8),
    "examples/mnist/sync.yaml": (ACCURACY, lambda accuracy: accuracy > 0.8),
    "examples/seed_style/job.yaml": (ACCURACY, lambda accuracy: accuracy > 0.8),
    "examples/caicloud_mnist/tfjob.yaml": (
        r"Accuracy for Test Data: ([0-9.]+)",
        lambda accuracy: accuracy > 0.8,
    ),
    "examples/keras_digits/mwms.yaml": (ACCURACY, lambda accuracy: accuracy > 0.9),
    "examples/keras_digits/pss.yaml": (ACCURACY, lambda accuracy: accuracy > 0.9),
    "examples/gang/podgroup-tfjob.yaml": (ACCURACY, lambda accuracy: accuracy > 0.8),
    "examples/linear_regression/tfjob.yaml": (  # y = 2x + 1
        r"learned w=(-?[0-9.]+) b=",
        lambda w: abs(w - 2.0) < 0.2,
    ),
}


def test_the_required_examples_exist() -> None:
    paths = {p for p, _ in EXAMPLES}
    assert {"examples/mnist/async.yaml", "examples/mnist/sync.yaml"} <= paths
    assert "examples/seed_style/job.yaml" in paths
    assert {"examples/keras_digits/mwms.yaml", "examples/keras_digits/pss.yaml"} <= paths


@pytest.mark.parametrize(("path", "name"), EXAMPLES, ids=[p for p, _ in EXAMPLES])
def test_example_succeeds(path: str, name: str, tmp_path: Path) -> None:
    job = fresh_copy(path, tmp_path)
    result = run_taas("run", str(job), "--no-color", "--quiet-table", timeout=220)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    status = final_status(result.stdout, name)
    assert condition(status, "Succeeded")["status"] == "True"
    assert f"TFJob {name} Succeeded" in result.stdout
    assert path in RESULTS, f"add {path}'s result line to RESULTS"
    pattern, good = RESULTS[path]
    values = [float(v) for v in re.findall(pattern, result.stdout)]
    assert values, f"no line matching {pattern!r} in the output:\n{result.stdout[-4000:]}"
    assert all(good(v) for v in values), values


@pytest.mark.parametrize(("path", "name"), QUEUED, ids=[p for p, _ in QUEUED])
def test_a_queued_example_is_refused_with_the_reason(path: str, name: str, tmp_path: Path) -> None:
    """A TFJob created suspended waits for a queue (Kueue) to admit it; `taas run` has no queue,
    so it runs nothing and says why, naming the field and the fix."""
    job = fresh_copy(path, tmp_path)
    result = run_taas("run", str(job), "--no-color", "--quiet-table", timeout=120)
    assert result.returncode == 1, result.stdout[-4000:] + result.stderr
    said = result.stdout + result.stderr
    assert f"TFJob {name} not run: spec.runPolicy.suspend is true" in said
    assert "set it to false to run the job" in said and "Traceback" not in said


def test_keras_digits_exports_under_multi_worker_mirrored(tmp_path: Path) -> None:
    """``MNIST_EXPORT_DIR`` makes the chief alone call ``export_model`` (a save every worker
    must join): the job Succeeds with one SavedModel there."""
    job = fresh_copy("examples/keras_digits/mwms.yaml", tmp_path)
    docs = list(yaml.safe_load_all(job.read_text()))
    export = tmp_path / "export"
    for doc in docs:
        for spec in doc["spec"]["tfReplicaSpecs"].values():
            for container in spec["template"]["spec"]["containers"]:
                env = container["env"]  # one list for every replica (a YAML anchor)
                if not any(entry["name"] == "MNIST_EXPORT_DIR" for entry in env):
                    env.append({"name": "MNIST_EXPORT_DIR", "value": str(export)})
    job.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    result = run_taas("run", str(job), "--no-color", "--quiet-table", timeout=220)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    assert "TFJob keras-mwms Succeeded" in result.stdout
    assert sorted(p.parent for p in tmp_path.rglob("saved_model.pb")) == [export]
