"""Every TFJob YAML under examples/ runs to Succeeded through `taas run` (real TensorFlow
processes on 127.0.0.1: 1 PS + 2 workers for the MNIST and seed-style examples).

Examples are found by globbing, so new ones are covered as they land.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from local_harness import REPO, condition, final_status, fresh_copy, run_taas

pytestmark = [pytest.mark.tensorflow, pytest.mark.timeout(240)]


def example_jobs() -> list[tuple[str, str]]:
    """(path relative to the repo, TFJob name) of every example TFJob."""
    found = []
    for path in sorted(REPO.glob("examples/*/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "TFJob":
                found.append((str(path.relative_to(REPO)), doc["metadata"]["name"]))
    return found


EXAMPLES = example_jobs()


def test_the_required_examples_exist() -> None:
    paths = {p for p, _ in EXAMPLES}
    assert {"examples/mnist/async.yaml", "examples/mnist/sync.yaml"} <= paths
    assert "examples/seed_style/job.yaml" in paths


@pytest.mark.parametrize(("path", "name"), EXAMPLES, ids=[p for p, _ in EXAMPLES])
def test_example_succeeds(path: str, name: str, tmp_path: Path) -> None:
    job = fresh_copy(path, tmp_path)
    result = run_taas("run", str(job), "--no-color", "--quiet-table", timeout=220)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    status = final_status(result.stdout, name)
    assert condition(status, "Succeeded")["status"] == "True"
    assert f"TFJob {name} Succeeded" in result.stdout
    accuracies = [float(a) for a in re.findall(r"test accuracy: ([0-9.]+)", result.stdout)]
    assert all(a > 0.8 for a in accuracies), accuracies
