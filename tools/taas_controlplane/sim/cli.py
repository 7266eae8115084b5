"""`taas-controlplane sim up|down`: a simulated cluster from the command line.

sim up --nodes N [--gpu-nodes M] [--dir DIR] [--default-timings]
       [--gang scheduler-plugins] [--kueue [tfjob|pod]] [--kueue-pods-ready-timeout SECONDS]
    starts it, prints the KUBECONFIG line, records itself in <cache>/sim/<pid>.json and
    waits; Ctrl-C or SIGTERM stops every process and removes what it made.
sim down
    SIGTERMs every `sim up` recorded there (by its pid) and waits for it to finish.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from taas_controlplane.build.binaries import BuildError, cache_root
from taas_controlplane.cluster.scheduling import SchedulingOptions
from taas_controlplane.controlplane.etcd_apiserver import ControlPlaneError
from taas_controlplane.foreground import hold, stop_on_signals
from taas_controlplane.sim.cluster import SimCluster, SimClusterError
from taas_controlplane.sim.command_lines import Timings


def _records() -> Path:
    path = cache_root() / "sim"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def up(
    nodes: int,
    gpu_nodes: int,
    directory: Path | None,
    default_timings: bool,
    scheduling: SchedulingOptions | None = None,
) -> int:
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
    try:
        sim = SimCluster(
            nodes,
            gpu_nodes,
            directory,
            Timings.defaults() if default_timings else Timings.for_tests(),
            scheduling,
        )
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    stop = stop_on_signals()
    record = _records() / f"{os.getpid()}.json"
    started = time.monotonic()
    try:
        sim.start()
    except (BuildError, ControlPlaneError, SimClusterError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    record.write_text(json.dumps({"pid": os.getpid(), "dir": str(sim.directory)}))
    print(
        f"{nodes} simulated nodes ({gpu_nodes} with nvidia.com/gpu) Ready in "
        f"{sim.nodes_ready_seconds:.1f}s; cluster up in {time.monotonic() - started:.1f}s"
    )
    print("In another shell:")
    print(f"  export KUBECONFIG={sim.kubeconfig}")
    print("  kubectl get nodes")
    print("Ctrl-C (or `taas-controlplane sim down`) stops it.", flush=True)
    try:
        return hold(stop, sim.exited, sim.plane.directory)
    finally:
        sim.stop()
        record.unlink(missing_ok=True)
        print("simulated cluster stopped", flush=True)


def down(timeout: float = 60.0) -> int:
    stopped = 0
    for record in sorted(_records().glob("*.json")):
        try:
            pid = int(json.loads(record.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            record.unlink(missing_ok=True)
            continue
        if not _alive(pid):
            record.unlink(missing_ok=True)
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pid):
            print(f"error: sim up (pid {pid}) still running after {timeout:.0f}s", file=sys.stderr)
            return 1
        record.unlink(missing_ok=True)
        stopped += 1
        print(f"stopped the simulated cluster of pid {pid}")
    if not stopped:
        print("no simulated cluster running")
    return 0
