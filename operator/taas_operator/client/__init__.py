"""A Python client for TFJobs on a cluster, and the `taas` commands built on it.

    from taas_operator.client import TFJobClient
    client = TFJobClient()                       # kubeconfig as kubectl finds it
    job = client.create("examples/mnist/async.yaml")
    for line in client.logs(job.name, follow=True):
        print(f"[{line.replica}] {line.text}")
    client.wait(job.name, timeout=600)           # raises JobFailed with the job's own message

Modules: `jobs` (TFJobClient: create, create_job, get, list, wait, logs, events, pods, delete,
scale_job, suspend/resume, watch), `manifests` (what create sends, how stored jobs are read),
`programs` and `programoptions` (a TFJob running a local .py file, shipped in a ConfigMap:
what create_job and `taas submit PROGRAM.py` send), `submitflags` (that command's flags), `watching`
(list + watch, resumed), `logs` (following replica logs), `models` (ReplicaPod, LogLine,
JobEvent, JobChange), `errors` (JobFailed, WaitTimeout and the client's own checks; the rest
is the one hierarchy of `taas_operator.apiserver.errors`, exported here too), `console` (the
tables and the live view of `taas submit`), `commands` (`taas submit | logs | get | wait |
delete | scale`), `scale` (the Worker count through the scale subresource), `shapes` (a
plain program's own strategy against the job's shape: warnings), `kubeconfigs` (`taas
kubeconfig`: a team member's kubeconfig from a ServiceAccount token). Every request
goes through `taas_operator.apiserver` (`blocking.Connection`).

Why here, a layer of `taas_operator` beside the controller: the trainer package `taas` must not
import `taas_operator` (a training program needs no operator code), and only
`taas_operator.apiserver` talks to a cluster (the import-linter contracts in pyproject.toml).
The client reuses the API
models (`taas_operator.api.TFJob`), the offline validation and bounded YAML reading of `taas
validate` (`taas_operator.documents`), and the terminal output of `taas run`
(`taas_operator.terminal`).
Names are imported lazily: `import taas_operator.client` costs nothing until used.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "TFJobClient": "taas_operator.client.jobs",
    "ReplicaPod": "taas_operator.client.models",
    "LogLine": "taas_operator.client.models",
    "JobEvent": "taas_operator.client.models",
    "JobChange": "taas_operator.client.models",
    "ApiError": "taas_operator.apiserver.errors",
    "ClientError": "taas_operator.client.errors",
    "ConfigError": "taas_operator.apiserver.errors",
    "Unreachable": "taas_operator.apiserver.errors",
    "Forbidden": "taas_operator.apiserver.errors",
    "Invalid": "taas_operator.apiserver.errors",
    "NotFound": "taas_operator.apiserver.errors",
    "CrdMissing": "taas_operator.apiserver.errors",
    "JobNotFound": "taas_operator.apiserver.errors",
    "Conflict": "taas_operator.apiserver.errors",
    "AlreadyExists": "taas_operator.apiserver.errors",
    "JobFailed": "taas_operator.client.errors",
    "WaitTimeout": "taas_operator.client.errors",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'taas_operator.client' has no attribute {name!r}")
