"""Build the Dockerfile's `operator` and `trainer` images for real, once, into a cache.

    ensure_image("trainer") -> ImageArchive(reference="ghcr.io/taas-dev/taas-trainer:0.1.0",
                                           archive=Path(".../image.tar"), digest=..., ...)
    ctr -n k8s.io images import <archive>   # the image is then known under <reference>

The builder is buildah 1.28 from Debian bookworm (`apt-get install buildah`), not BuildKit from
Go modules: it is one package, needs no daemon, and builds this Dockerfile unchanged
(multi-stage, `RUN --mount=type=bind,from=...`, `COPY --chown`); BuildKit would add buildkitd,
its own runc worker setup and a Go build of several minutes to every fresh machine. Podman
(same store) runs the image tests' containers.

No registry is reachable, so the Dockerfile's `python:3.11-slim` is replaced through its build
args by a base made from Debian packages (`base_image.py`), and every wheel comes from a cache
filled once from PyPI (`wheelhouse.py`); the image build itself runs with `--network none`
(runc isolation). The Dockerfile's defaults stay what users get with `docker build`.

Cache (outside the repository, like the Go binaries; `TAAS_CACHE_DIR`, default ~/.cache/taas):
`images/<target>-<version>-<key>/{image.tar,image.json,build.log}`, where `key` hashes the
Dockerfile, the build context as .dockerignore admits it, the base image and the build
arguments. A key already built returns at once; the newest three builds per target are kept
(worktrees sharing the cache each keep theirs).
The images are tagged `ghcr.io/taas-dev/taas-{operator,trainer}:<version>`: the chart's default
operator image and the image the example TFJobs name, so the same YAML runs unchanged.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
import subprocess
import tarfile
import time
import tomllib
from pathlib import Path
from typing import Literal, cast, get_args

from pydantic import BaseModel

from taas_controlplane.build.base_image import BaseImage, ensure_base
from taas_controlplane.build.binaries import BuildError, _lock, _say, cache_root
from taas_controlplane.build.image_store import ImageBuildError, Store, images_root, require_tools
from taas_controlplane.build.wheelhouse import MOUNT, ensure_wheels

Target = Literal["operator", "trainer"]
TARGETS: tuple[Target, ...] = get_args(Target)
REPOSITORIES: dict[Target, str] = {
    "operator": "ghcr.io/taas-dev/taas-operator",  # charts/taas/values.yaml image.repository
    "trainer": "ghcr.io/taas-dev/taas-trainer",  # examples/*.yaml
}
RECIPE = 1  # bump when the way images are built changes, so cached ones are rebuilt
KEEP = 3  # builds kept per target (about 0.5 GB each for the trainer)


class ImageArchive(BaseModel):
    """A built image: `ctr -n k8s.io images import <archive>` makes `reference` available."""

    target: Target
    reference: str  # e.g. ghcr.io/taas-dev/taas-trainer:0.1.0
    archive: Path  # OCI archive (oci-layout + index.json naming `reference`)
    digest: str  # manifest digest: the DIGEST `ctr images ls` shows after the import
    image_id: str  # config digest: the IMAGE ID crictl, podman and buildah show
    size: int  # bytes of the archive
    base: str  # the base image it was built on


def repo_root() -> Path:
    """The repository this package runs from (an editable install: the build context)."""
    return Path(__file__).resolve().parents[3]


def _context(context: Path | None) -> Path:
    context = (context or repo_root()).resolve()
    if not (context / "Dockerfile").is_file():
        raise ImageBuildError(
            f"no Dockerfile in {context}: run from a TaaS checkout (pip install -e .) or pass "
            "the checkout with --context"
        )
    return context


def version(context: Path | None = None) -> str:
    """The project version (pyproject.toml), which is the images' tag."""
    text = (_context(context) / "pyproject.toml").read_text()
    return str(tomllib.loads(text)["project"]["version"])


def image_reference(target: Target, context: Path | None = None) -> str:
    """The name `target`'s image is built and imported under."""
    return f"{REPOSITORIES[target]}:{version(context)}"


def context_files(context: Path) -> list[Path]:
    """The files a build sees, per .dockerignore. It is an allow-list (`**`, then `!path`
    lines, then `**/pattern` exclusions); any other kind of line is refused rather than
    guessed, so the cache key never misses a file the build uses."""
    include: list[str] = []
    exclude: list[str] = []
    for raw in (context / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line == "**":
            continue
        if line.startswith("!") and "*" not in line:
            include.append(line[1:].strip("/"))
        elif line.startswith("**/") and "/" not in line[3:]:
            exclude.append(line[3:])
        else:
            raise ImageBuildError(
                f".dockerignore line {raw!r} is not understood by taas_controlplane.build.images "
                "(allow-list `!path` and `**/name` lines only): extend context_files()"
            )
    files: list[Path] = []
    for name in include:
        top = context / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*"))
        for path in candidates:
            parts = path.relative_to(context).parts
            if path.is_file() and not any(
                fnmatch.fnmatch(part, pattern) for part in parts for pattern in exclude
            ):
                files.append(path)
    return files


def build_key(target: Target, context: Path, base: BaseImage, build_args: dict[str, str]) -> str:
    """The cache key of one build: what it is built from, nothing else."""
    digest = hashlib.sha256(json.dumps([RECIPE, target, base.reference, build_args]).encode())
    for path in [context / "Dockerfile", context / ".dockerignore", *context_files(context)]:
        relative = path.relative_to(context).as_posix()
        mode = path.stat().st_mode & 0o111
        digest.update(f"{relative}\0{mode:o}\0".encode() + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _manifest_digest(archive: Path) -> str:
    with tarfile.open(archive) as tar:
        member = tar.extractfile("index.json")
        assert member is not None
        index = json.load(member)
    return str(index["manifests"][0]["digest"])


def _cached(directory: Path) -> ImageArchive | None:
    meta = directory / "image.json"
    if not meta.exists():
        return None
    image = ImageArchive.model_validate_json(meta.read_text())
    return image if image.archive.exists() else None


def ensure_image(
    target: Target, *, context: Path | None = None, store: Store | None = None
) -> ImageArchive:
    """`target`'s image as an archive, built first when the cache lacks this exact build.

    Raises ImageBuildError naming the failed step and its log (missing tools, not root, a
    failed download or build)."""
    if target not in TARGETS:
        raise ImageBuildError(f"unknown image {target!r}: one of {', '.join(TARGETS)}")
    context = _context(context)
    store = store or Store()
    require_tools("buildah")
    base = ensure_base(store)
    build_args = {
        "PYTHON_IMAGE": base.reference,
        "BASE_IMAGE": base.reference,
        "PIP_CONFIG_FILE": f"{MOUNT}/pip.conf",
    }
    tag = version(context)
    directory = images_root() / f"{target}-{tag}-{build_key(target, context, base, build_args)}"
    found = _cached(directory)
    if found is not None:
        return found
    with _lock(cache_root() / "locks" / f"image-{target}.lock"):
        found = _cached(directory)  # another process may have built it while we waited
        if found is not None:
            return found
        return _build(target, context, store, base, build_args, directory)


def _build(
    target: Target,
    context: Path,
    store: Store,
    base: BaseImage,
    build_args: dict[str, str],
    directory: Path,
) -> ImageArchive:
    reference = image_reference(target, context)
    wheels = ensure_wheels(store, base, context, target)
    staging = directory.with_name(directory.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    previous = store.image_id(reference) if store.has_image(reference) else None
    label = f"building {target} image"
    _say(f"{label} {reference} (log: {staging / 'build.log'})")
    started = time.monotonic()
    bud = ["bud", "--isolation", "oci", "--network", "none", "--pull=never", "--layers=false"]
    bud += ["--target", target, "--tag", reference, "--file", str(context / "Dockerfile")]
    bud += ["--iidfile", str(staging / "iid")]
    for name, value in build_args.items():
        bud += ["--build-arg", f"{name}={value}"]
    bud += ["--volume", f"{wheels}:{MOUNT}:ro", str(context)]
    store.run_logged(store.buildah(*bud), label, staging / "build.log")
    # By ID from here on: another checkout sharing this cache may retag the name meanwhile.
    image_id = "sha256:" + (staging / "iid").read_text().strip().removeprefix("sha256:")
    _say(f"{label}: saving {reference} as an OCI archive")
    store.save(image_id, staging / "image.tar", reference)
    image = ImageArchive(
        target=target,
        reference=reference,
        archive=directory / "image.tar",
        digest=_manifest_digest(staging / "image.tar"),
        image_id=image_id,
        size=(staging / "image.tar").stat().st_size,
        base=base.reference,
    )
    (staging / "image.json").write_text(image.model_dump_json(indent=2) + "\n")
    shutil.rmtree(directory, ignore_errors=True)
    staging.rename(directory)
    _prune(target, directory, store, previous if previous != image_id else None)
    elapsed = time.monotonic() - started
    _say(f"{label}: {reference} built in {elapsed:.0f}s ({image.size / 2**20:.0f} MiB archive)")
    return image


def _prune(target: Target, current: Path, store: Store, previous: str | None) -> None:
    """Keep the newest KEEP builds of `target` (several checkouts may share this cache, each
    with its own sources), and drop the image the name pointed to before this build from the
    store unless a container uses it: its archive, if still kept, reloads it on demand."""
    builds = sorted(
        (d for d in current.parent.glob(f"{target}-*") if (d / "image.json").exists()),
        key=lambda d: (d / "image.json").stat().st_mtime,
        reverse=True,
    )
    for old in builds[KEEP:]:
        if old != current:
            shutil.rmtree(old, ignore_errors=True)
    if previous is not None:
        rmi = store.buildah("rmi", previous)
        subprocess.run(rmi, env=store.env(), capture_output=True, check=False)


def ensure_loaded(image: ImageArchive, store: Store | None = None) -> str:
    """Make sure the store holds `image` (from its archive if need be); return its ID for
    podman (`store.run_container(ensure_loaded(image), ...)`)."""
    store = store or Store()
    store.load(image.archive, image.image_id)
    return image.image_id.removeprefix("sha256:")


def push_reference(image: ImageArchive, destination: str) -> str:
    """Where `image` goes in `destination` (`REGISTRY[/PREFIX]`): `<destination>/<name>:<tag>`,
    the name and tag of its own reference (`taas-trainer:0.1.0`)."""
    destination = destination.strip().rstrip("/")
    if not destination or "://" in destination or destination.startswith("/"):
        raise ImageBuildError(
            f"--push {destination!r}: give REGISTRY/PREFIX without a scheme, e.g. "
            "127.0.0.1:5001/taas (the push side of `taas-controlplane cluster up`'s registry)"
        )
    return f"{destination}/{image.reference.rsplit('/', 1)[1]}"


def push(
    image: ImageArchive,
    destination: str,
    cert_dir: Path | None,
    store: Store | None = None,
    auth_file: Path | None = None,
) -> str:
    """`buildah push` `image` to `push_reference(image, destination)` over TLS, trusting the CAs
    in `cert_dir` (else the system's), with the credentials of `auth_file` (else buildah's
    own: `REGISTRY_AUTH_FILE`); returns `<reference>@<manifest digest>`."""
    store = store or Store()
    reference = push_reference(image, destination)
    image_id = ensure_loaded(image, store)
    digest_file = images_root() / "tmp" / f"push-{image_id[:12]}.digest"
    digest_file.parent.mkdir(parents=True, exist_ok=True)
    options = ["--quiet", "--digestfile", str(digest_file)]
    options += [] if cert_dir is None else ["--cert-dir", str(cert_dir)]
    options += [] if auth_file is None else ["--authfile", str(auth_file)]
    command = store.buildah("push", *options, image_id, f"docker://{reference}")
    try:
        store.output(command, f"pushing {reference}")
    except ImageBuildError as err:
        if "authentication required" in str(err) or "unauthorized" in str(err):
            raise ImageBuildError(
                f"{err}\nfix: the registry wants push credentials: give them in "
                "REGISTRY_AUTH_FILE (`taas-controlplane env` sets it for the running cluster's "
                "registry, whose credentials `images --push` finds by itself)"
            ) from None
        if "x509" not in str(err) and "certificate" not in str(err):
            raise
        raise ImageBuildError(
            f"{err}\nfix: this machine does not trust the registry's certificate: pass "
            "--cert-dir DIR, a directory with its CA certificate as a *.crt file (the running "
            "`taas-controlplane cluster up`'s registry is trusted without it)"
        ) from None
    digest = digest_file.read_text().strip()
    digest_file.unlink()
    return f"{reference}@{digest}"


def main(
    targets: list[str],
    context: Path | None = None,
    destination: str | None = None,
    cert_dir: Path | None = None,
    auth_file: Path | None = None,
) -> int:
    """`taas-controlplane images [operator|trainer] [--push REGISTRY/PREFIX]`: build (or find)
    them; print each one (and push it, trusting `cert_dir`'s CA, with `auth_file`'s
    credentials, printing where it went)."""
    try:
        for name in targets or list(TARGETS):
            if name not in TARGETS:
                raise ImageBuildError(f"unknown image {name!r}: one of {', '.join(TARGETS)}")
            image = ensure_image(cast(Target, name), context=context)
            print(f"{image.reference} {image.archive} {image.digest}", flush=True)
            if destination is not None:
                pushed = push(image, destination, cert_dir, auth_file=auth_file)
                print(f"pushed {pushed}", flush=True)
    except BuildError as err:
        _say(f"error: {err}")
        return 1
    return 0
