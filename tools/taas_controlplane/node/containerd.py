"""The node's container runtime: containerd (with its CRI plugin) and runc, from Debian packages.

Why Debian packages and not Go modules: containerd's CRI plugin, runc and the CNI plugins need
cgo, libseccomp and a matching set of shims and plugin binaries; Debian bookworm ships them
built, tested together and signed (`containerd` 1.6.20, `runc` 1.1.5,
`containernetworking-plugins` 1.1.1), and `.ci/run` installs them with apt-get. The Kubernetes
components, which build statically from Go modules, are built (build/binaries.py).

Everything containerd writes at run time (socket, state, netns mounts, shim sockets, runc
state) lives under the run's own directory; its content store (imported images) lives in a
cache directory kept between runs, so a large trainer image is unpacked once. Settings this
machine needs (NODE-NOTES.md): `restrict_oom_score_adj` (no CAP_SYS_RESOURCE), cgroupfs
(cgroup v1), a locally made sandbox image.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from taas_controlplane.parts import log_tail
from taas_operator.processes import spawn
from taas_operator.processes import stop as stop_process

NAMESPACE = "k8s.io"  # the containerd namespace the CRI plugin keeps Kubernetes' containers in
CNI_BIN_DIR = "/usr/lib/cni"  # where Debian's containernetworking-plugins installs them
REQUIRED = {
    "containerd": "containerd",
    "containerd-shim-runc-v2": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    f"{CNI_BIN_DIR}/bridge": "containernetworking-plugins",
    f"{CNI_BIN_DIR}/host-local": "containernetworking-plugins",
    "iptables": "iptables",
    "ipset": "ipset",
    "conntrack": "conntrack",
    "busybox": "busybox-static",
}


class ContainerdError(RuntimeError):
    """containerd failed to start or to run a command; the message has the log tail."""


def missing_packages() -> list[str]:
    """Debian packages whose binaries are absent (what `.ci/run` would install)."""
    absent = [b for b in REQUIRED if not (shutil.which(b) or Path(b).exists())]
    return sorted({REQUIRED[b] for b in absent})


class Containerd:
    """One containerd with its own socket and state under `run_dir`, content under `root`."""

    def __init__(self, run_dir: Path, root: Path, cni_conf_dir: Path, sandbox_image: str) -> None:
        self.run_dir, self.root = run_dir, root
        self.state = run_dir / "containerd-state"
        self.cni_conf_dir = cni_conf_dir
        self.sandbox_image = sandbox_image
        #: containerd's registry `config_path` (`<host:port>/hosts.toml` in it), if any.
        self.hosts_dir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.state / "containerd.sock"

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket}"

    @property
    def log(self) -> Path:
        return self.run_dir / "containerd.log"

    def _config(self) -> str:
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        runc = f"{cri}.containerd.runtimes.runc"
        registry = ""
        if self.hosts_dir is not None:
            registry = f'  [{cri}.registry]\n    config_path = "{self.hosts_dir}"\n'
        return f"""version = 2
root = "{self.root}"
state = "{self.state}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{self.socket}.ttrpc"
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{self.root}/opt"

[{cri}]
  sandbox_image = "{self.sandbox_image}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_cdi = false
  [{cri}.cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{self.cni_conf_dir}"
    max_conf_num = 1
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{runc}]
      runtime_type = "io.containerd.runc.v2"
      [{runc}.options]
        SystemdCgroup = false
        Root = "{self.state}/runc"
{registry}"""

    def start(self, timeout: float = 60.0, namespaces: Sequence[int] = ()) -> None:
        """Start containerd (inside the `namespaces` given: a node's network namespace, where
        its CNI plugins then make the pods' links) and wait until it answers."""
        self.state.mkdir(parents=True, exist_ok=True)
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.run_dir / "containerd.toml"
        config.write_text(self._config())
        with self.log.open("ab") as log:
            self.proc = spawn(
                ["containerd", "--config", str(config), "--log-level", "warn"],
                death_signal=signal.SIGTERM,
                stdout=log,
                namespaces=namespaces,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ContainerdError(f"containerd exited ({self.proc.returncode}); {self._tail()}")
            if self.socket.exists() and self.ctr("version", check=False).returncode == 0:
                return
            time.sleep(0.2)
        raise ContainerdError(f"containerd not ready after {timeout:.0f}s; {self._tail()}")

    def ctr(
        self, *args: str, check: bool = True, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        """Run `ctr` against this containerd in the Kubernetes namespace."""
        done = subprocess.run(
            ["ctr", "--address", str(self.socket), "--namespace", NAMESPACE, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise ContainerdError(f"`ctr {' '.join(args)}` failed: {done.stderr.strip()}")
        return done

    def images(self) -> set[str]:
        return set(self.ctr("images", "list", "--quiet").stdout.split())

    def import_archive(self, archive: Path) -> None:
        """Import an OCI/docker archive (its tags are the image names kubelet will ask for)."""
        self.ctr("images", "import", "--no-unpack=false", str(archive))

    def image_records(self) -> dict[str, str]:
        """Every image record: name -> the digest it points at (`ctr images list`)."""
        records: dict[str, str] = {}
        for line in self.ctr("images", "list").stdout.splitlines()[1:]:
            columns = line.split()
            if len(columns) >= 3:
                records[columns[0]] = columns[2]
        return records

    def prune_images(self) -> list[str]:
        """Remove the image records no tag points at any more, unless a container uses one.

        An import under a tag the store already has (a new trainer build is imported as the
        same `ghcr.io/...:0.1.0`) moves the tag, but the records the CRI plugin added for the
        old image (its ID `sha256:...` and `name@sha256:...`) keep it, and its unpacked
        snapshots, forever: about 2 GB per trainer build. containerd's garbage collector frees
        their content once the records are gone (`--sync` waits for it). Returns the names.
        """
        records = self.image_records()
        tagged = {d for n, d in records.items() if "@" not in n and not n.startswith("sha256:")}
        rows = self.ctr("containers", "list").stdout.splitlines()[1:]
        in_use = {row.split()[1] for row in rows if len(row.split()) >= 2}  # the IMAGE column
        kept = tagged | {records[n] for n in in_use if n in records}
        stale = sorted(n for n, d in records.items() if d not in kept)
        if stale:
            self.ctr("images", "remove", "--sync", *stale)
        return stale

    def containers(self) -> list[str]:
        return self.ctr("containers", "list", "--quiet", check=False).stdout.split()

    def remove_all_containers(self) -> None:
        """Kill and delete every task and container in the Kubernetes namespace (sandboxes too).

        What kubelet would do for each deleted pod, minus the CNI teardown: the caller removes
        the network namespaces' mounts and the bridge afterwards.
        """
        for cid in self.containers():
            self.ctr("tasks", "kill", "--all", "--signal", "SIGKILL", cid, check=False)
        for cid in self.containers():
            for _ in range(50):
                if self.ctr("tasks", "delete", "--force", cid, check=False).returncode == 0:
                    break
                if cid not in self.ctr("tasks", "list", "--quiet", check=False).stdout.split():
                    break
                time.sleep(0.1)
            self.ctr("containers", "delete", cid, check=False)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc, signal.SIGTERM, grace=15.0)
            self.proc = None

    def _tail(self) -> str:
        return f"log {self.log}:\n{log_tail(self.log, 20)}"
