"""scheduler-plugins' coscheduling: its CRDs, the scheduler's configuration, both command lines.

    source = scheduler_plugins_source()              # sigs.k8s.io/scheduler-plugins's tree
    crd_files(source) -> list[Path]                   # PodGroup, ElasticQuota
    scheduler_config(source, kubeconfig, name) -> dict
    scheduler_argv(config_file, kubeconfig, port) -> list[str]
    controller_argv(kubeconfig, metrics_port, probe_port) -> list[str]

Pure apart from reading the module's files. The scheduler runs as a second scheduler beside
kube-scheduler, under its own `schedulerName` (default `scheduler-plugins-scheduler`, the name
its own chart gives it and TaaS's `--gang-pod-scheduler-name` default), with the module's
`manifests/coscheduling/scheduler-config.yaml` as its profile: Coscheduling at every extension
point and as the queue sort, `permitWaitingTimeSeconds: 10`. The controller keeps PodGroup
status (phase, scheduled and running counts); coscheduling looks at a waiting gang again when
its PodGroup changes, so a gang that waited for another to finish is placed as soon as the
controller notices, not at the scheduler's 5-minute flush. It needs both CRDs. Both serve only
on 127.0.0.1 and run without leader election.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from taas_controlplane.build.binaries import SCHEDULER_PLUGINS_VERSION, ensure, module_source

SCHEDULER_PLUGINS_MODULE = "sigs.k8s.io/scheduler-plugins"
DEFAULT_SCHEDULER_NAME = "scheduler-plugins-scheduler"
PODGROUP_CRD = "podgroups.scheduling.x-k8s.io"
ELASTICQUOTA_CRD = "elasticquotas.scheduling.x-k8s.io"


def scheduler_plugins_source() -> Path:
    """The extracted source of scheduler-plugins' module (Go module cache)."""
    return module_source(SCHEDULER_PLUGINS_MODULE, SCHEDULER_PLUGINS_VERSION)


def crd_files(source: Path) -> list[Path]:
    """The PodGroup CRD (coscheduling) and the ElasticQuota CRD its controller also watches."""
    manifests = source / "manifests"
    return [manifests / "coscheduling" / "crd.yaml", manifests / "capacityscheduling" / "crd.yaml"]


def scheduler_config(source: Path, kubeconfig: str, scheduler_name: str) -> dict[str, Any]:
    """The module's coscheduling profile, under `scheduler_name`, talking to `kubeconfig`."""
    path = source / "manifests" / "coscheduling" / "scheduler-config.yaml"
    config: dict[str, Any] = yaml.safe_load(path.read_text())
    config["clientConnection"] = {"kubeconfig": kubeconfig}
    config["leaderElection"] = {"leaderElect": False}
    (profile,) = config["profiles"]
    profile["schedulerName"] = scheduler_name
    return config


def scheduler_argv(config_file: Path, kubeconfig: str, port: int) -> list[str]:
    return [
        str(ensure("scheduler-plugins-scheduler")),
        f"--config={config_file}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--v=2",  # its binds and gang rejections in the log
    ]


def controller_argv(kubeconfig: str, metrics_port: int, probe_port: int) -> list[str]:
    return [
        str(ensure("scheduler-plugins-controller")),
        f"--kubeconfig={kubeconfig}",
        f"--metricsAddr=127.0.0.1:{metrics_port}",
        f"--probeAddr=127.0.0.1:{probe_port}",
        # Its defaults (5 QPS, 1 worker) fall behind with hundreds of PodGroups; status updates
        # are what wakes a waiting gang, so they must keep up.
        "--qps=50",
        "--burst=100",
        "--workers=4",
    ]
