"""The machine's one cluster: its lock and the record of its last run.

    state_dir() -> Path                  `<cache>/node`
    last_run() -> Path                   the record a run writes at start, removes at stop
    clean_stale_run() -> str             `taas-controlplane cluster clean`
    running_directory() -> Path | None   the running cluster's directory, if one runs
    running_kubeconfig() -> Path | None  its admin kubeconfig

One cluster per machine: kube-proxy and kube-router of the one-node cluster own host-wide
iptables chains, and a run killed before it could stop is scrubbed from its record by the next
start (or by `cluster clean`), which must not touch a cluster that still runs.
"""

from __future__ import annotations

import fcntl
from pathlib import Path

from taas_controlplane.build.binaries import cache_root
from taas_controlplane.node import host_scrub


def state_dir() -> Path:
    """`<cache>/node`: the lock, the record of the last run, node 0's container store."""
    path = cache_root() / "node"
    path.mkdir(parents=True, exist_ok=True)
    return path


def last_run() -> Path:
    """The record a run writes when it starts and removes when it stops."""
    return state_dir() / "last-run.json"


def clean_stale_run() -> str:
    """`taas-controlplane cluster clean`: scrub a killed run's leftovers (not a running one)."""
    handle = (state_dir() / "cluster.lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return "a cluster is running: stop it with Ctrl-C in its `cluster up` instead"
    try:
        return (
            "removed a killed run's leftovers"
            if host_scrub.RunRecord.scrub_saved(last_run())
            else "nothing to clean"
        )
    finally:
        handle.close()


def running_directory() -> Path | None:
    """The directory of the cluster running on this machine, if one runs.

    A running cluster holds `cluster.lock` and has saved its directory in `last-run.json`; a
    killed run leaves the record but not the lock. The lock is only tested (a shared lock taken
    and dropped at once), never kept.
    """
    lock, record = state_dir() / "cluster.lock", last_run()
    if not (lock.exists() and record.exists()):
        return None
    with lock.open() as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: a cluster runs
        else:
            fcntl.flock(handle, fcntl.LOCK_UN)
            return None
    return host_scrub.RunRecord.model_validate_json(record.read_text()).directory


def running_kubeconfig() -> Path | None:
    """The admin kubeconfig of the cluster running on this machine, if one runs."""
    directory = running_directory()
    kubeconfig = None if directory is None else directory / "controlplane" / "admin.kubeconfig"
    return kubeconfig if kubeconfig is not None and kubeconfig.exists() else None
