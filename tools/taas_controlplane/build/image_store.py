"""buildah and podman on one private image store under the cache, with progress for humans.

Every command here runs as root against `cache_root()/images/storage` (never the machine's
default store in /var/lib/containers), so the images TaaS builds, the tests' containers and
anything else on the machine stay apart. `Store.run_container` starts a container of a built
image with podman for the image tests: read-only root, no network, limits this machine allows.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from taas_controlplane.build.binaries import BuildError, _say, cache_root

# Debian bookworm packages the image build needs (installed by .ci/run): buildah builds,
# debootstrap makes the base image, podman + runc run the tests' containers.
APT_PACKAGES = ("buildah", "podman", "runc", "debootstrap")

# podman lowers its own RLIMIT_NPROC to 32768 before starting runc, and runc cannot raise a
# limit without CAP_SYS_RESOURCE (absent here): asking for more fails every container with
# "error setting rlimit type 6: operation not permitted".
_PODMAN_NPROC = 32768
_STEP = re.compile(r"^(\[\d+/\d+\] )?STEP \d+/\d+: ")


class ImageBuildError(BuildError):
    """An image could not be built or run; the message says why and where the log is."""


def images_root() -> Path:
    """Everything image-related lives here (`cache_root()/images`)."""
    return cache_root() / "images"


def require_tools(*names: str) -> None:
    """Fail with the install command when a tool is missing or we are not root."""
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        raise ImageBuildError(
            f"{', '.join(missing)} not found on PATH. Install the image tools (Debian bookworm): "
            f"apt-get install -y --no-install-recommends {' '.join(APT_PACKAGES)}"
        )
    if os.geteuid() != 0:
        raise ImageBuildError(
            "building and running the TaaS images needs root (debootstrap, buildah and podman "
            "with a private store; CI runs as root): run it with sudo"
        )


class Store:
    """The private containers-storage: `buildah(...)`/`podman(...)` command prefixes."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or images_root() / "storage"
        # Runtime state (mount counts, locks) beside the store, so one path pair names it (the
        # commands in docs/deploy.md); nothing here stays mounted between calls, so state left
        # over by a reboot has no mounts to disagree with.
        self.runroot = self.root.parent / "run"
        # buildah's temporary files (a whole layer while committing) go beside the store, not
        # to a possibly small /var/tmp.
        self.tmpdir = images_root() / "tmp"

    def _options(self) -> list[str]:
        return ["--root", str(self.root), "--runroot", str(self.runroot)]

    def buildah(self, *args: str) -> list[str]:
        return ["buildah", *self._options(), "--storage-driver", "overlay", *args]

    def podman(self, *args: str) -> list[str]:
        return [
            "podman",
            *self._options(),
            "--storage-driver",
            "overlay",
            "--cgroup-manager",
            "cgroupfs",  # cgroup v1, no systemd here
            "--events-backend",
            "none",
            "--tmpdir",
            str(self.runroot / "libpod"),
            *args,
        ]

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        return {**os.environ, "TMPDIR": str(self.tmpdir), **(extra or {})}

    def output(self, cmd: list[str], what: str) -> str:
        """Run a short command; its stdout, stripped, or an ImageBuildError naming `what`."""
        done = subprocess.run(cmd, env=self.env(), capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ImageBuildError(f"{what} failed (exit {done.returncode}): {done.stderr.strip()}")
        return done.stdout.strip()

    def has_image(self, reference: str) -> bool:
        cmd = self.buildah("inspect", "--type", "image", "--format", "{{.FromImageID}}", reference)
        done = subprocess.run(cmd, env=self.env(), capture_output=True, text=True, check=False)
        return done.returncode == 0

    def image_id(self, reference: str) -> str:
        """`sha256:<config digest>`: the image ID buildah, podman and containerd's CRI show."""
        cmd = self.buildah("inspect", "--type", "image", "--format", "{{.FromImageID}}", reference)
        return "sha256:" + self.output(cmd, f"buildah inspect {reference}").removeprefix("sha256:")

    def image_config(self, reference: str) -> dict[str, Any]:
        """The image's OCI `config` (User, Entrypoint, Cmd, Env, WorkingDir, ...)."""
        cmd = self.buildah("inspect", "--type", "image", reference)
        config = json.loads(self.output(cmd, f"buildah inspect {reference}"))["OCIv1"]["config"]
        assert isinstance(config, dict)
        return config

    def load(self, archive: Path, image: str) -> None:
        """Put an OCI archive's image into the store (no network) unless `image` (its name or
        ID) is there already."""
        if not self.has_image(image):
            self.output(self.buildah("pull", "-q", f"oci-archive:{archive}"), f"loading {archive}")

    def save(self, image: str, archive: Path, reference: str) -> None:
        """Write `image` (a name or ID) as an OCI archive whose index names it `reference`
        (`ctr images import` tags the image with that name)."""
        archive.unlink(missing_ok=True)
        target = f"oci-archive:{archive}:{reference}"
        self.output(self.buildah("push", "-q", image, target), f"saving {reference}")

    def run_logged(
        self,
        cmd: list[str],
        label: str,
        log: Path,
        quiet_after: float = 20.0,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        """Run a long command, its output to `log`; show buildah's STEP lines as they come and,
        while a step runs quietly, its latest output line every `quiet_after` seconds."""
        started = time.monotonic()
        last_said = started
        latest = ""
        with log.open("a") as log_file:
            log_file.write("$ " + " ".join(cmd) + "\n")
            log_file.flush()
            proc = subprocess.Popen(
                cmd,
                env=self.env(extra_env),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
            )
            assert proc.stdout is not None
            for line in proc.stdout:
                log_file.write(line)
                line = line.strip()
                if not line:
                    continue
                now = time.monotonic()
                if _STEP.match(line):
                    _say(f"{label}: {_short(line)} ({now - started:.0f}s)")
                    last_said = now
                elif now - last_said >= quiet_after:
                    _say(f"{label}: ... {_short(line)} ({now - started:.0f}s)")
                    last_said = now
                latest = line
            code = proc.wait()
        if code != 0:
            tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-20:])
            raise ImageBuildError(
                f"{label} failed (exit {code}); full log: {log}\n{tail}\n(last line: {latest})"
            )

    def run_container(
        self,
        reference: str,
        argv: Sequence[str] = (),
        *,
        user: str | None = None,
        entrypoint: Sequence[str] | None = None,
        read_only: bool = True,
        timeout: float = 300,
    ) -> subprocess.CompletedProcess[str]:
        """Run a container of `reference` with podman (removed afterwards; no network; read-only
        root file system unless `read_only=False`); stdout and stderr are captured."""
        require_tools("podman", "runc")
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        if nproc == resource.RLIM_INFINITY or nproc > _PODMAN_NPROC:
            nproc = _PODMAN_NPROC
        options = [
            "--rm",
            "--pull=never",
            "--network=none",
            f"--ulimit=nofile={nofile}:{nofile}",
            f"--ulimit=nproc={nproc}:{nproc}",
        ]
        if read_only:
            options.append("--read-only")
        if user is not None:
            options.append(f"--user={user}")
        if entrypoint is not None:
            options.append(f"--entrypoint={json.dumps(list(entrypoint))}")
        # podman (cgroupfs driver) leaves its parent cgroup and conmon's behind in every v1
        # hierarchy; a parent of this call's own is removed afterwards.
        name = f"taas-image-run-{uuid.uuid4().hex[:10]}"
        options += [f"--name={name}", f"--cgroup-parent=/{name}"]
        cmd = self.podman("run", *options, reference, *argv)
        try:
            return subprocess.run(
                cmd, env=self.env(), capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            # podman is killed, but not its container: stop and remove that too
            rm = self.podman("rm", "--force", "--time", "0", name)
            subprocess.run(rm, env=self.env(), capture_output=True, check=False)
            raise
        finally:
            _remove_cgroup(name)


def _remove_cgroup(name: str) -> None:
    """rmdir `name` (and the empty cgroups under it) in every hierarchy; conmon may take a
    moment to leave after the container exits."""
    deadline = time.monotonic() + 5
    for top in Path("/sys/fs/cgroup").glob(f"*/{name}"):
        inner = sorted((d for d in top.rglob("*") if d.is_dir()), reverse=True)
        for directory in [*inner, top]:
            while True:
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)


def _short(line: str, width: int = 110) -> str:
    line = re.sub(r"\s+", " ", line)
    return line if len(line) <= width else line[: width - 3] + "..."
