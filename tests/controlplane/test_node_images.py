"""The node's derived image archives (an image plus one layer of files, ~0.9 GB each for a
trainer image) are made per trainer build and per set of files; only the newest few of each
image name stay in the cache, the one just made always among them, other names untouched."""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from pathlib import Path

import pytest

from taas_controlplane.build import busybox_images


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TAAS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "node" / "images"


def _base(tmp_path: Path) -> Path:
    return busybox_images.write_archive(
        tmp_path / "base.tar", "taas.local/base:1", b"", ["/bin/sh"]
    )


def test_old_derived_archives_of_a_name_are_pruned(cache: Path, tmp_path: Path) -> None:
    base = _base(tmp_path)
    other = busybox_images.derived_archive(base, "taas.local/other:1", {"/x": b"x"})
    made = []
    for n in range(busybox_images.KEEP_DERIVED + 2):
        archive = busybox_images.derived_archive(
            base, "taas.local/job:1", {"/app/v": str(n).encode()}
        )
        os.utime(archive, (1_000 + n, 1_000 + n))  # made in this order, whatever the clock
        made.append(archive)
        with tarfile.open(archive) as tar:
            assert "index.json" in tar.getnames()
    kept = sorted(p for p in cache.iterdir() if p.name.startswith("taas.local_job_1-"))
    assert kept == sorted(made[-busybox_images.KEEP_DERIVED :])
    assert other.exists()  # another name keeps its own


def test_the_archive_just_made_is_kept_even_when_older_by_its_clock(
    cache: Path, tmp_path: Path
) -> None:
    base = _base(tmp_path)
    future = time.time() + 10**6  # archives stamped by a clock ahead of this one
    others = []
    for n in range(busybox_images.KEEP_DERIVED):
        archive = busybox_images.derived_archive(base, "taas.local/job:1", {"/v": str(n).encode()})
        os.utime(archive, (future + n, future + n))
        others.append(archive)
    fresh = busybox_images.derived_archive(base, "taas.local/job:1", {"/v": b"fresh"})
    assert fresh.exists()
    # The one in use stays; of the others the oldest went, so KEEP_DERIVED remain in all.
    assert [p.exists() for p in others] == [False, True, True]


def _read(archive: Path, digest: str) -> bytes:
    with tarfile.open(archive) as tar:
        handle = tar.extractfile("blobs/sha256/" + digest.split(":", 1)[1])
        assert handle is not None
        return handle.read()


def test_a_derived_image_with_an_entrypoint_runs_its_program(cache: Path, tmp_path: Path) -> None:
    """A Go binary on the node's busybox (Katib's suggestion and collector): the program is
    executable and the image's entrypoint, the base's command gone."""
    base = _base(tmp_path)
    archive = busybox_images.derived_archive(
        base, "taas.local/tool:1", {"/bin/tool": b"\x7fELF", "/etc/x": b"x"}, ["/bin/tool"]
    )
    with tarfile.open(archive) as tar:
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
    manifest = json.loads(_read(archive, index["manifests"][0]["digest"]))
    config = json.loads(_read(archive, manifest["config"]["digest"]))
    assert config["config"]["Entrypoint"] == ["/bin/tool"] and "Cmd" not in config["config"]
    layer = io.BytesIO(_read(archive, manifest["layers"][-1]["digest"]))
    with tarfile.open(fileobj=layer) as tar:
        modes = {m.name: m.mode for m in tar.getmembers() if m.isfile()}
    assert modes == {"bin/tool": 0o755, "etc/x": 0o644}
    # Without an entrypoint the base's stays, and the files are only readable.
    plain = busybox_images.derived_archive(base, "taas.local/tool:1", {"/bin/tool": b"\x7fELF"})
    assert plain != archive
