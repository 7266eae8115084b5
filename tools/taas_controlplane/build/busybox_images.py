"""Small OCI image archives made by hand from Debian's static busybox: the node's own images.

    sandbox_archive() -> Path   # the "pause" image every pod's sandbox runs (SANDBOX_IMAGE)
    toolbox_archive() -> Path   # busybox with its applets on PATH (TOOLBOX_IMAGE): test pods
    derived_archive(base, reference, files) -> Path   # an image plus one layer of files

No registry is reachable here, so even the sandbox image is made locally. An image is one
uncompressed layer, a config and a manifest in an OCI layout (`oci-layout`, `index.json`,
`blobs/sha256/...`) tarred up, which `ctr images import` reads; the reference is in the index's
`org.opencontainers.image.ref.name` and `io.containerd.image.name` annotations. Archives are
cached in `<cache>/node/images/`, keyed by the busybox binary and the image settings; of the
derived ones (about 0.9 GB each for a trainer image) the newest KEEP_DERIVED per name are kept.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

from taas_controlplane.build.binaries import cache_root

KEEP_DERIVED = 3  # derived archives kept per reference (each trainer build makes new ones)
SANDBOX_IMAGE = "taas.local/pause:1"
TOOLBOX_IMAGE = "taas.local/toolbox:1"
# PID 1 of every pod sandbox: blocks until told to stop, and stops at once on SIGTERM.
_PAUSE = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"


def _busybox() -> Path:
    found = shutil.which("busybox")
    if found is None:
        raise FileNotFoundError(
            "busybox not found: install Debian's busybox-static (`.ci/run` does) to make the "
            "node's sandbox and toolbox images"
        )
    return Path(found)


def _layer(busybox: Path) -> bytes:
    """A tar with /bin/busybox, a symlink per applet in /bin, and /tmp."""
    applets = subprocess.run(
        [str(busybox), "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory, mode in (("bin", 0o755), ("tmp", 0o1777), ("etc", 0o755)):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        data = busybox.read_bytes()
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
        for applet in sorted(set(applets) - {"busybox"}):
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
        passwd = b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size, info.mode = len(passwd), 0o644
        tar.addfile(info, io.BytesIO(passwd))
    return buffer.getvalue()


def _blob(tar: tarfile.TarFile, data: bytes) -> dict[str, object]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo("blobs/sha256/" + digest.split(":", 1)[1])
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
    return {"digest": digest, "size": len(data)}


def _write_index(tar: tarfile.TarFile, manifest: dict[str, Any], reference: str) -> None:
    """Add `manifest` as a blob and index.json naming it `reference` (for containerd too)."""
    manifest_blob = _blob(tar, json.dumps(manifest).encode())
    entry = {
        "mediaType": manifest.get("mediaType", "application/vnd.oci.image.manifest.v1+json"),
        **manifest_blob,
        "annotations": {
            "org.opencontainers.image.ref.name": reference,
            "io.containerd.image.name": reference,
        },
    }
    data = json.dumps({"schemaVersion": 2, "manifests": [entry]}).encode()
    info = tarfile.TarInfo("index.json")
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_archive(target: Path, reference: str, layer: bytes, entrypoint: list[str]) -> Path:
    """Write a one-layer OCI archive for `reference` running `entrypoint`."""
    layer_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": entrypoint, "Env": ["PATH=/bin"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [layer_id]},
    }
    partial = target.with_suffix(".partial")
    with tarfile.open(partial, "w") as tar:
        layout = json.dumps({"imageLayoutVersion": "1.0.0"}).encode()
        info = tarfile.TarInfo("oci-layout")
        info.size = len(layout)
        tar.addfile(info, io.BytesIO(layout))
        layer_blob = _blob(tar, layer)
        config_blob = _blob(tar, json.dumps(config).encode())
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_blob},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **layer_blob}],
        }
        _write_index(tar, manifest, reference)
    partial.rename(target)
    return target


def _prune_derived(current: Path, stem: str) -> None:
    """Keep ``current`` and the newest KEEP_DERIVED - 1 other archives of one reference; remove
    the rest (a new trainer build or new files make a new archive; nothing else removes one)."""
    name = re.compile(re.escape(stem) + r"-[0-9a-f]{12}\.tar")
    others = sorted(
        (p for p in current.parent.iterdir() if name.fullmatch(p.name) and p != current),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in others[KEEP_DERIVED - 1 :]:
        old.unlink(missing_ok=True)


def _cached(reference: str, entrypoint: list[str]) -> Path:
    busybox = _busybox()
    key = hashlib.sha256(busybox.read_bytes() + json.dumps([reference, entrypoint]).encode())
    directory = cache_root() / "node" / "images"
    directory.mkdir(parents=True, exist_ok=True)
    stem = reference.replace("/", "_").replace(":", "_")
    target = directory / f"{stem}-{key.hexdigest()[:12]}.tar"
    if not target.exists():
        write_archive(target, reference, _layer(busybox), entrypoint)
    return target


def sandbox_archive() -> Path:
    """The sandbox ("pause") image: a shell that waits for SIGTERM."""
    return _cached(SANDBOX_IMAGE, ["/bin/sh", "-c", _PAUSE])


def toolbox_archive() -> Path:
    """busybox with every applet on PATH (nc, wget, nslookup, sleep...): for test pods."""
    return _cached(TOOLBOX_IMAGE, ["/bin/sh"])


def _layer_of(files: dict[str, bytes], executable: str | None = None) -> bytes:
    """A tar of `files` (absolute path -> content, readable by all; `executable` also
    executable) and their directories."""
    buffer = io.BytesIO()
    directories = sorted(
        {str(parent) for name in files for parent in Path(name.lstrip("/")).parents} - {"."}
    )
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory in directories:
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name.lstrip("/"))
            info.size = len(data)
            info.mode = 0o755 if name == executable else 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def derived_archive(
    base: Path, reference: str, files: dict[str, bytes], entrypoint: list[str] | None = None
) -> Path:
    """`base` (an OCI archive with one image) plus one layer holding `files`, as `reference`;
    with `entrypoint`, that is the image's (its program, one of `files`, made executable).

    What a short Dockerfile (`FROM base` + `COPY` [+ `ENTRYPOINT`]) makes, without a builder: the
    base's blobs are copied as they are, a layer, config and manifest are added, and the index
    names the new manifest. Cached next to the node's other images, keyed by the base, the files
    and the entrypoint.
    """
    key = hashlib.sha256(f"{base.resolve()}:{base.stat().st_mtime_ns}:{reference}".encode())
    if entrypoint is not None:
        key.update(json.dumps(entrypoint).encode())
    for name, data in sorted(files.items()):
        key.update(name.encode() + hashlib.sha256(data).digest())
    directory = cache_root() / "node" / "images"
    directory.mkdir(parents=True, exist_ok=True)
    stem = reference.replace("/", "_").replace(":", "_")
    target = directory / f"{stem}-{key.hexdigest()[:12]}.tar"
    if target.exists():
        return target
    layer = _layer_of(files, entrypoint[0] if entrypoint else None)
    layer_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    partial = target.with_suffix(".partial")
    with tarfile.open(base) as source, tarfile.open(partial, "w") as tar:

        def blob(digest: str) -> bytes:
            handle = source.extractfile("blobs/sha256/" + digest.split(":", 1)[1])
            assert handle is not None, f"{base} lacks blob {digest}"
            return handle.read()

        index_file = source.extractfile("index.json")
        assert index_file is not None, f"{base} is not an OCI archive (no index.json)"
        manifest = json.loads(blob(json.load(index_file)["manifests"][0]["digest"]))
        config = json.loads(blob(manifest["config"]["digest"]))
        for member in source:
            if member.name != "index.json":
                tar.addfile(member, source.extractfile(member) if member.isfile() else None)
        config["rootfs"]["diff_ids"].append(layer_id)
        if entrypoint is not None:
            settings = config.setdefault("config", {})
            settings["Entrypoint"] = entrypoint
            settings.pop("Cmd", None)
        config.setdefault("history", []).append({"created_by": f"taas: add {sorted(files)}"})
        layer_blob = _blob(tar, layer)
        config_blob = _blob(tar, json.dumps(config).encode())
        manifest["config"] = {**manifest["config"], **config_blob}
        manifest["layers"].append(
            {"mediaType": "application/vnd.oci.image.layer.v1.tar", **layer_blob}
        )
        _write_index(tar, manifest, reference)
    partial.rename(target)
    _prune_derived(target, stem)
    return target
