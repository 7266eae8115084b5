"""What a cluster run leaves on the host, and the scrub that removes it.

    HostState.capture(run_dir, bridge) -> HostState    # links, mounts, iptables, ipsets, ...
    before.leftovers(after) -> list[str]               # what `after` has that `before` lacks
    scrub(run_dir, bridge, sysctls)                    # remove everything a run may have left

The cluster stops its components in order first (cluster/cluster.py); the scrub then removes what a
component does not remove by itself, and everything after a crash: processes of the run (found
by id: a command line naming the run directory, a root file system under it, or the cgroup of
one of its containers), mounts under the run directory (container root file systems,
`/dev/shm`, pods' network namespaces, kubelet's volumes, and with several nodes each node's
network namespace, which ends with everything in it: its links, routes, iptables rules and
ipsets), the bridge and veths attached to it, iptables chains of
Kubernetes and kube-router (`KUBE-*`) and the bridge's guard chain with every rule that jumps to
them, kube-router's ipsets, CNI cache files of the run's network, and the kernel settings kubelet
changes (restored to the values captured before the run).
 `KUBE-*` chains and ipsets are taken to be the run's own: cluster/cluster.py holds a machine-wide
lock,
so no other Kubernetes node runs here at the same time.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

from pydantic import BaseModel

from taas_controlplane.node.host_network import GUARD_PREFIX, NetworkConfig, NodeNetwork

# Kernel settings kubelet sets at start (its "kernel tunables"), restored after a run. The
# host-wide forwarding and br_netfilter switches are never written (host_network.py uses the
# bridge's own), and kube-proxy is told to leave conntrack and route_localnet alone.
SYSCTLS = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
)
# The cgroup (in every v1 hierarchy) containerd puts the pods' containers in: kubelet runs with
# cgroupsPerQOS off and no cgroup root, so the CRI plugin uses its namespace's name.
CGROUP_PARENT = "k8s.io"
CGROUP_ROOT = Path("/sys/fs/cgroup")
TABLES = ("filter", "nat", "mangle", "raw")
CNI_CACHE = Path("/var/lib/cni/results")
_OWN_PREFIXES = ("KUBE-", GUARD_PREFIX)


def output(*cmd: str) -> str:
    """A command's stdout ('' when the command is missing)."""
    try:
        done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return ""
    return done.stdout


def read_sysctls() -> dict[str, str]:
    values = {}
    for name in SYSCTLS:
        with contextlib.suppress(OSError):
            values[name] = Path("/proc/sys", name).read_text().strip()
    return values


def _mountpoints() -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        raw = line.split()[4]
        points.append(raw.encode().decode("unicode_escape"))
    return points


def _iptables_rules(binary: str) -> list[str]:
    """Rules, user chains and non-default policies (an empty built-in chain is no leftover: an
    iptables-nft table, once used, stays until `nft` deletes it)."""
    lines = []
    for table in TABLES:
        for line in output(f"{binary}-save", "-t", table).splitlines():
            if line.startswith("-A"):
                lines.append(f"{table} {line}")
            elif line.startswith(":") and line.split()[1] != "ACCEPT":
                lines.append(f"{table} {' '.join(line.split()[:2])}")
    return lines


def container_ids(run_dir: Path) -> set[str]:
    """Ids of the run's containers: their task directories in its containerd's state (one
    node: `<run>/containerd-state`; more: `<run>/<node>/containerd-state`), kept after a kill."""
    tasks = f"containerd-state/io.containerd.runtime.v2.task/{CGROUP_PARENT}/*"
    return {p.name for pattern in (tasks, f"*/{tasks}") for p in run_dir.glob(pattern)}


def _container_of(entry: Path) -> str:
    """The container id of a process in a pod cgroup (`/k8s.io/<id>`), '' otherwise."""
    for line in (entry / "cgroup").read_text().splitlines():
        parts = line.rsplit(":", 1)[-1].split("/")
        if len(parts) == 3 and parts[1] == CGROUP_PARENT:
            return parts[2]
    return ""


def run_processes(run_dir: Path, named: Path | None = None) -> list[int]:
    """Pids of processes of a run: those naming the run directory (or `named`), and its
    containers' (by root file system, or, once its shim is gone, by the container's cgroup: a
    container in its own mount namespace shows `/` as its root)."""
    marker = str(named or run_dir).encode()
    ids = container_ids(run_dir)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            root = os.readlink(entry / "root")
            container = _container_of(entry) if ids else ""
        except OSError:
            continue
        if marker in cmdline or root.startswith(marker.decode() + "/") or container in ids:
            found.append(int(entry.name))
    return found


class HostState(BaseModel):
    """What of the host's state a cluster run can have changed: only what can be told apart as
    the run's (the machine is shared: other tools' bridges, mounts and rules are not listed)."""

    links: list[str]  # the bridge and every link attached to it
    mounts: list[str]  # below the run directory or the container runtime's root
    iptables: list[str]  # rules and chains naming KUBE-*, the guard chain, or the bridge
    ip6tables: list[str]
    ipsets: list[str]  # KUBE-* (kube-router's)
    routes: list[str]  # through the bridge
    sysctls: dict[str, str]  # SYSCTLS
    processes: list[int]  # naming the run directory, or with a root below it (containers)
    cni_cache: list[str]  # /var/lib/cni/results files of the run's networks and containers
    cgroups: list[str]  # the pods' cgroups

    @classmethod
    def capture(cls, run_dir: Path, network: NetworkConfig, roots: list[Path]) -> HostState:
        bridge = network.bridge
        under = tuple(str(root) + "/" for root in [run_dir, *roots])

        def ours(rule: str) -> bool:
            return any(word in rule for word in (*_OWN_PREFIXES, bridge))

        links = [
            line.split(":")[1].strip().split("@")[0]
            for cmd in (
                ("ip", "-o", "link", "show", bridge),
                ("ip", "-o", "link", "show", "master", bridge),
            )
            for line in output(*cmd).splitlines()
        ]
        return cls(
            links=sorted(links),
            mounts=sorted(p for p in _mountpoints() if p.startswith(under)),
            iptables=[r for r in _iptables_rules("iptables") if ours(r)],
            ip6tables=[r for r in _iptables_rules("ip6tables") if ours(r)],
            ipsets=sorted(n for n in output("ipset", "list", "-n").split() if _own(n)),
            routes=sorted(
                r for r in output("ip", "route", "show", "table", "all").splitlines() if bridge in r
            ),
            sysctls=read_sysctls(),
            processes=run_processes(run_dir),
            cni_cache=sorted(p.name for p in _cni_cache(run_dir, network)),
            cgroups=sorted(str(p) for p in _pod_cgroups()),
        )

    def leftovers(self, after: HostState) -> list[str]:
        """Everything of a run's in `after` that was not here before, one line each."""
        found = []
        fields = ("links", "mounts", "iptables", "ip6tables", "ipsets", "routes", "cgroups")
        for field in (*fields, "cni_cache"):
            extra = sorted(set(getattr(after, field)) - set(getattr(self, field)))
            found += [f"{field}: {item}" for item in extra]
        found += [f"process: {pid}" for pid in after.processes]
        for name, value in after.sysctls.items():
            if self.sysctls.get(name, value) != value:
                found.append(f"sysctl {name}: {self.sysctls[name]} -> {value}")
        return found


def _cni_cache(run_dir: Path, network: NetworkConfig) -> list[Path]:
    """CNI result files of the run: its networks' (`<network>-*`, `<network>-<node>-*` with
    several nodes), and any of its containers' (containerd's own `cni-loopback` network, whose
    files stay when a killed run's pods never had their networks torn down)."""
    ids = container_ids(run_dir)
    return [
        path
        for path in CNI_CACHE.glob("*")
        if path.name.startswith(f"{network.network_name}-")
        or any(f"-{cid}-" in path.name for cid in ids)
    ]


def _pod_cgroups() -> list[Path]:
    """The pods' cgroup directories (parent and containers) in every hierarchy."""
    found = []
    for parent in CGROUP_ROOT.glob(f"*/{CGROUP_PARENT}"):
        found += [p for p in parent.iterdir() if p.is_dir()]
        found.append(parent)
    return found


def remove_pod_cgroups() -> None:
    """Remove the (empty, once the containers are gone) pod cgroups, children first."""
    for path in _pod_cgroups():
        with contextlib.suppress(OSError):
            path.rmdir()


def kill_run_processes(run_dir: Path, named: Path | None = None) -> None:
    """SIGKILL every process of the run (`run_processes`, by pid), until none is left or 10 s
    have passed."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pids = run_processes(run_dir, named)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)


def unmount_under(run_dir: Path) -> None:
    """Unmount every mount below the run directory, deepest first (lazily if still busy)."""
    prefix = str(run_dir) + "/"
    for point in sorted((p for p in _mountpoints() if p.startswith(prefix)), reverse=True):
        if subprocess.run(["umount", point], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True)


def _own(name: str) -> bool:
    return name.startswith(_OWN_PREFIXES)


def remove_chains(binary: str) -> None:
    """Delete rules jumping to the run's chains, then flush and delete those chains."""
    for table in TABLES:
        saved = output(f"{binary}-save", "-t", table).splitlines()
        chains = [ln.split()[0][1:] for ln in saved if ln.startswith(":") and _own(ln[1:])]
        for line in saved:
            if not line.startswith("-A "):
                continue
            words = shlex.split(line)
            target = words[words.index("-j") + 1] if "-j" in words else ""
            if not _own(words[1]) and _own(target):
                subprocess.run([binary, "-w", "-t", table, "-D", *words[1:]], capture_output=True)
        for op in ("-F", "-X"):
            for chain in chains:
                subprocess.run([binary, "-w", "-t", table, op, chain], capture_output=True)


def destroy_ipsets() -> None:
    for name in output("ipset", "list", "-n").split():
        if _own(name):
            subprocess.run(["ipset", "destroy", name], capture_output=True)


def scrub(run_dir: Path, network: NetworkConfig, sysctls: dict[str, str]) -> None:
    """Remove whatever a run left (see the module docstring); safe to call more than once."""
    bridge = network.bridge
    cni_cache = _cni_cache(run_dir, network)  # before the containers' state is unmounted
    kill_run_processes(run_dir)
    unmount_under(run_dir)
    for line in output("ip", "-o", "link", "show", "master", bridge).splitlines():
        veth = line.split(":")[1].strip().split("@")[0]
        subprocess.run(["ip", "link", "delete", veth], capture_output=True)
    NodeNetwork(network).down()  # the guard rules, then the bridge
    for binary in ("iptables", "ip6tables"):
        remove_chains(binary)
    destroy_ipsets()
    remove_pod_cgroups()
    for entry in cni_cache:
        entry.unlink(missing_ok=True)
    current = read_sysctls()
    for name, value in sysctls.items():
        if current.get(name) != value:
            with contextlib.suppress(OSError):
                Path("/proc/sys", name).write_text(value)


class RunRecord(BaseModel):
    """What a running cluster saves, so that the next start can scrub it if it was killed."""

    directory: Path
    network: NetworkConfig
    sysctls: dict[str, str]

    @classmethod
    def scrub_saved(cls, path: Path) -> bool:
        """Scrub the run saved at `path` (then forget it); False when there is none."""
        if not path.exists():
            return False
        record = cls.model_validate_json(path.read_text())
        scrub(record.directory, record.network, record.sysctls)
        path.unlink()
        return True
