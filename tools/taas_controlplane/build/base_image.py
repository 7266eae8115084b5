"""The local Python base image: Debian bookworm from debootstrap, Python 3.11 in a venv.

No registry is reachable here, so the Dockerfile's default `python:3.11-slim` cannot be pulled;
this is its stand-in, made from Debian packages only (the apt mirror this machine uses) and
passed to the build as `--build-arg PYTHON_IMAGE=... --build-arg BASE_IMAGE=...`.

What `python:3.11-slim` gives the Dockerfile, this gives too: `python` and `pip` on PATH,
`useradd`, `ls`, `/bin/bash`. `python` is `/opt/venv/bin/python`, a venv of Debian's python3.11
with pip from python3-venv's bundled wheel: Debian's own interpreter refuses `pip install`
into /usr (PEP 668, "externally managed"), and a venv is the way Debian documents around that,
with no `--break-system-packages` and nothing of pip's mixed into Debian's files.

debootstrap is the slow part (about a minute), so the image is cached twice: as an OCI archive
`images/base/taas-python-<tag>-<key>.tar` (survives a wiped store) and in the private store as
`localhost/taas-python:<tag>-<key>`; the key hashes the recipe below.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from pydantic import BaseModel

from taas_controlplane.build.binaries import _lock, _say, cache_root
from taas_controlplane.build.image_store import Store, images_root, require_tools

SUITE = "bookworm"
PYTHON = "3.11"  # bookworm's python3
PACKAGES = ("python3", "python3-venv", "ca-certificates")
VENV = "/opt/venv"
ENV = {
    "PATH": f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
}
REPOSITORY = "localhost/taas-python"
DEFAULT_MIRROR = "http://deb.debian.org/debian"


class BaseImage(BaseModel):
    """The base image, in the store under `reference` and saved as `archive`."""

    reference: str
    archive: Path


def _key() -> str:
    recipe = {"suite": SUITE, "packages": PACKAGES, "venv": VENV, "env": ENV, "recipe": 1}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]


def debian_mirror() -> str:
    """The Debian mirror apt uses here (`TAAS_DEBIAN_MIRROR` overrides it)."""
    if os.environ.get("TAAS_DEBIAN_MIRROR"):
        return os.environ["TAAS_DEBIAN_MIRROR"]
    apt = Path("/etc/apt")
    # deb822 files: a stanza with `URIs:` and `Suites:` naming the suite
    for path in sorted(apt.glob("sources.list.d/*.sources")):
        for stanza in re.split(r"\n\s*\n", path.read_text(errors="replace")):
            fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.MULTILINE))
            suites, types = fields.get("Suites", "").split(), fields.get("Types", "deb").split()
            if SUITE in suites and "deb" in types and fields.get("URIs"):
                return fields["URIs"].split()[0]
    # one-line format: `deb [options] URI suite components`
    for path in [apt / "sources.list", *sorted(apt.glob("sources.list.d/*.list"))]:
        if not path.exists():
            continue
        for line in path.read_text(errors="replace").splitlines():
            match = re.match(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line.strip())
            if match and match[2] == SUITE:
                return match[1]
    return DEFAULT_MIRROR


def _apt_proxy_env() -> dict[str, str]:
    """An `Acquire::http::Proxy` apt is configured with, as debootstrap's http_proxy."""
    if shutil.which("apt-config") is None:
        return {}
    out = subprocess.run(
        ["apt-config", "shell", "PROXY", "Acquire::http::Proxy"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    match = re.search(r"PROXY='([^']+)'", out)
    return {"http_proxy": match[1]} if match else {}


def unmount_below(path: Path) -> None:
    """Unmount whatever a failed debootstrap left mounted under `path` (/proc, /sys), deepest
    first, so removing the container leaves no mount behind."""
    prefix = str(path).rstrip("/") + "/"
    with open("/proc/self/mountinfo") as mountinfo:
        points = [line.split()[4] for line in mountinfo]
    for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def _build(store: Store, reference: str, log: Path) -> None:
    label = f"building base image {reference}"
    name = f"taas-base-{_key()}"
    subprocess.run(store.buildah("rm", name), env=store.env(), capture_output=True, check=False)
    store.output(store.buildah("from", "--name", name, "scratch"), "buildah from scratch")
    mount = Path(store.output(store.buildah("mount", name), "buildah mount"))
    try:
        mirror = debian_mirror()
        _say(f"{label}: debootstrap {SUITE} from {mirror} (about a minute)")
        debootstrap = [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(PACKAGES)}",
            SUITE,
            str(mount),
            mirror,
        ]
        store.run_logged(debootstrap, label, log, extra_env=_apt_proxy_env())
        # no package files or lists in the image: apt-get update first, as in python:*-slim
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (mount / leftover).glob("*"):
                if item.is_file():
                    item.unlink()
        _say(f"{label}: python{PYTHON} -m venv {VENV}")
        venv = store.buildah("run", "--isolation", "chroot", name, "--")
        store.run_logged([*venv, "python3", "-m", "venv", VENV], label, log)
        config = [
            "config",
            "--cmd",
            '["python"]',
            "--label",
            f"org.opencontainers.image."
            f"description=Debian {SUITE} + Python {PYTHON} in {VENV} (TaaS local base)",
        ]
        for key, value in ENV.items():
            config += ["--env", f"{key}={value}"]
        store.output(store.buildah(*config, name), "buildah config")
        unmount_below(mount)
        store.output(store.buildah("commit", "-q", name, reference), "buildah commit")
    finally:
        unmount_below(mount)
        subprocess.run(store.buildah("rm", name), env=store.env(), capture_output=True, check=False)


def ensure_base(store: Store | None = None) -> BaseImage:
    """The base image, built when the cache lacks it, loaded into the store when only its
    archive is there. Raises ImageBuildError (with the log's path) when a step fails."""
    store = store or Store()
    tag = f"{PYTHON}-{SUITE}-{_key()}"
    reference = f"{REPOSITORY}:{tag}"
    archive = images_root() / "base" / f"taas-python-{tag}.tar"
    if not archive.exists():
        with _lock(cache_root() / "locks" / "image-base.lock"):
            if not archive.exists():  # another process may have built it while we waited
                require_tools("buildah", "debootstrap")
                archive.parent.mkdir(parents=True, exist_ok=True)
                log = archive.with_suffix(".log")
                log.unlink(missing_ok=True)
                started = time.monotonic()
                if not store.has_image(reference):
                    _build(store, reference, log)
                partial = archive.with_name(archive.name + ".partial")
                store.save(reference, partial, reference)
                partial.rename(archive)
                elapsed = time.monotonic() - started
                _say(f"base image {reference} built in {elapsed:.0f}s, saved to {archive}")
    require_tools("buildah")
    store.load(archive, reference)
    return BaseImage(reference=reference, archive=archive)
