"""The environment a `taas run` replica starts from, before its container env is laid over it.

    EnvPolicy(inherit=False, passed=())       # --inherit-env, --pass-env NAME (repeatable)
    base_env(policy, environ=os.environ) -> dict[str, str]

A pod gets only its template's env (and what Kubernetes adds); a replica of `taas run` is the
same, so the runner's credentials (KUBECONFIG, AWS_SECRET_ACCESS_KEY, GOOGLE_APPLICATION_
CREDENTIALS, tokens of any kind) never reach a training program that did not ask for them. On
top of its template's env (`container.launch_spec`) and what TaaS sets for a pod (TF_CONFIG,
PS_HOSTS/WORKER_HOSTS/JOB_NAME/TASK_INDEX, the progress variables), a replica gets only what is
needed to find Python and run on this machine, when the runner has it:

    PATH, HOME, USER, LOGNAME, SHELL, TERM, TZ, TMPDIR, LANG, LANGUAGE, LC_*   the basics
    VIRTUAL_ENV, CONDA_PREFIX, PYTHONPATH, PYTHONHOME                          this Python
    LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES                                      GPU libraries
    SYSTEMROOT                                                                 (Windows)

`--pass-env NAME` adds one more variable of the runner's; `--inherit-env` gives the replicas the
runner's whole environment (what `taas run` did before).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import BaseModel

#: Variables a replica keeps from the runner's environment (see the module's docstring).
KEPT = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "TZ",
    "TMPDIR",
    "LANG",
    "LANGUAGE",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    "PYTHONHOME",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "SYSTEMROOT",
)
KEPT_PREFIXES = ("LC_",)


class EnvPolicy(BaseModel):
    """What of the runner's environment the replicas get beyond `KEPT`."""

    inherit: bool = False
    passed: tuple[str, ...] = ()


def base_env(policy: EnvPolicy, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The runner's variables a replica starts with, under `policy`."""
    source = os.environ if environ is None else environ
    if policy.inherit:
        return dict(source)
    return {
        name: value
        for name, value in source.items()
        if name in KEPT or name.startswith(KEPT_PREFIXES) or name in policy.passed
    }
