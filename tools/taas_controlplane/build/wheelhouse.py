"""The wheel cache of the image builds: every wheel an image installs, downloaded once.

`pip wheel` runs in a throw-away container of the base image (the images' own Python and glibc,
so the wheels fit them) on the host network, with the host's CA bundle mounted over the
container's (`PIP_CERT`, else `/etc/ssl/certs/ca-certificates.crt`: this machine reaches PyPI
through a TLS-intercepting egress proxy). The image build then mounts this directory at `/mnt`
(present in every Debian image, so no empty mount point is left in a layer) and points pip at
`/mnt/pip.conf` (`no-index`, `find-links = /mnt/wheels`) through the Dockerfile's
`PIP_CONFIG_FILE` build arg: the image build itself needs no network and resolves the same
versions every time until the requirements change.

Why not pip's own cache (`RUN --mount=type=cache,target=/root/.cache/pip`): the egress proxy
strips PyPI's Cache-Control headers, so pip's HTTP cache stores nothing here.

A stamp per target records the requirement list the directory was last filled for; old wheels
stay (a later requirement change only adds), so deleting `images/pip` is the way to shrink it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Literal

from taas_controlplane.build.base_image import BaseImage
from taas_controlplane.build.binaries import _lock, _say, cache_root
from taas_controlplane.build.image_store import ImageBuildError, Store, images_root

Target = Literal["operator", "trainer"]

PIP_CONF = """\
# Written by taas_controlplane.build.wheelhouse: image builds install from the wheel cache only.
[global]
no-index = true
find-links = /mnt/wheels
"""
MOUNT = "/mnt"  # where the build sees this directory (see the module docstring)
DEFAULT_CA = Path("/etc/ssl/certs/ca-certificates.crt")


def requirements(context: Path, target: Target) -> list[str]:
    """What the target's build installs from PyPI: the build backend (the `build` stage's `pip
    wheel .`), the project's dependencies, and for the trainer its `tensorflow` extra."""
    try:
        project = tomllib.loads((context / "pyproject.toml").read_text())
        wanted = [*project["build-system"]["requires"], *project["project"]["dependencies"]]
        if target == "trainer":
            wanted += project["project"]["optional-dependencies"]["tensorflow"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as err:
        raise ImageBuildError(
            f"cannot read the requirements from {context / 'pyproject.toml'}: {err!r}"
        ) from err
    return [str(item) for item in wanted]


def host_ca_bundle() -> Path | None:
    """The CA bundle the host's pip trusts (`PIP_CERT`, else the Debian bundle)."""
    for candidate in (os.environ.get("PIP_CERT"), str(DEFAULT_CA)):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def ensure_wheels(store: Store, base: BaseImage, context: Path, target: Target) -> Path:
    """The wheel directory (to mount at `/mnt`), filled for `target`'s requirements."""
    directory = images_root() / "pip"
    wanted = requirements(context, target)
    key = hashlib.sha256(json.dumps([base.reference, wanted]).encode()).hexdigest()
    stamp = directory / f"{target}.stamp"
    if stamp.exists() and stamp.read_text() == key:
        return directory
    with _lock(cache_root() / "locks" / "image-wheels.lock"):
        if stamp.exists() and stamp.read_text() == key:
            return directory
        wheels = directory / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        _write_atomically(directory / "pip.conf", PIP_CONF)
        # pip writes into a directory of its own; finished wheels are then renamed into
        # wheels/, so a build of the other image reading wheels/ meanwhile never sees half a file
        incoming = directory / f"incoming-{target}"
        shutil.rmtree(incoming, ignore_errors=True)
        incoming.mkdir()
        label = f"downloading wheels for the {target} image"
        _say(f"{label}: {len(wanted)} requirements into {wheels}")
        name = f"taas-wheels-{target}"
        subprocess.run(store.buildah("rm", name), env=store.env(), capture_output=True)
        store.output(
            store.buildah("from", "--pull=never", "--name", name, base.reference), "buildah from"
        )
        run = ["run", "--isolation", "chroot", "--network", "host"]
        run += ["-v", f"{wheels}:{MOUNT}/wheels:ro", "-v", f"{incoming}:{MOUNT}/incoming"]
        ca = host_ca_bundle()
        if ca is not None:
            run += ["-v", f"{ca}:{DEFAULT_CA}:ro"]
        pip = ["python", "-m", "pip", "wheel", "--progress-bar", "off", "--wheel-dir"]
        pip += [f"{MOUNT}/incoming", "--find-links", f"{MOUNT}/wheels", *wanted]
        log = directory / f"{target}.log"
        log.unlink(missing_ok=True)
        started = time.monotonic()
        try:
            store.run_logged(store.buildah(*run, name, "--", *pip), label, log)
        finally:
            subprocess.run(store.buildah("rm", name), env=store.env(), capture_output=True)
        for wheel in incoming.glob("*.whl"):
            os.replace(wheel, wheels / wheel.name)
        shutil.rmtree(incoming)
        stamp.write_text(key)
        count = sum(1 for _ in wheels.glob("*.whl"))
        _say(f"{label}: done in {time.monotonic() - started:.0f}s ({count} wheels cached)")
    return directory


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)
