"""What a local `taas tensorboard` serves: a job file's chief model_dir, or a directory.

    local_logdirs(target, namespace) -> list[LocalLogdir]     InputError naming the fix
    logdir_args(logdirs) -> list[str]                         TensorBoard's --logdir[_spec]
    has_summaries(path) -> bool                               an event file within bounds

A job file is read by the one bounded loader (`taas_operator.documents`, the checks of `taas
validate`); each TFJob's chief model_dir comes from the one reading of its chief container
(`tensorboard.objects.chief_model_dir`, the trainer's own rules). A relative model_dir is taken
from the container's workingDir, else the current directory, as `taas run` starts it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from taas_operator.documents import InputError, load_tfjobs
from taas_operator.tensorboard.objects import ModelDirError, chief_model_dir

#: Files and directories looked at, at most, for an event file (a model_dir can be huge).
_SCAN_LIMIT = 20_000
_EVENTS = "events.out.tfevents."


@dataclass(frozen=True)
class LocalLogdir:
    """One directory of summaries and what it is (a job's name, for TensorBoard's run names)."""

    path: str
    name: str
    what: str  # for messages: "TFJob mnist's model_dir (env TF_LOGDIR)"

    @property
    def remote(self) -> bool:
        return "://" in self.path


def _is_job_file(target: str) -> bool:
    return target == "-" or target.endswith((".yaml", ".yml", ".json")) or Path(target).is_file()


def local_logdirs(target: str, namespace: str | None = None) -> list[LocalLogdir]:
    """The directories to serve for `target` (a job file, `-`, or a directory)."""
    if not _is_job_file(target):
        path = Path(target)
        if not path.is_dir():
            raise InputError(
                f"{target!r} is neither a TFJob file nor a directory: give the job's YAML "
                "(as given to `taas run`), its model_dir, or a TFJob name with a cluster's "
                "kubeconfig"
            )
        return [LocalLogdir(str(path.resolve()), path.name or "logdir", f"directory {target}")]
    found = []
    for job in load_tfjobs(target, namespace):
        try:
            model_dir = chief_model_dir(job)
        except ModelDirError as err:
            raise InputError(f"TFJob {job.name}: {err}") from None
        where = model_dir.path
        if not model_dir.remote:
            base = str(model_dir.container.get("workingDir") or os.getcwd())
            where = os.path.normpath(os.path.join(base, where))
        what = f"TFJob {job.name}'s model_dir ({model_dir.source} of its {model_dir.replica})"
        found.append(LocalLogdir(where, job.name, what))
    return found


def missing(logdirs: list[LocalLogdir]) -> list[LocalLogdir]:
    """The local directories that do not exist (yet)."""
    return [d for d in logdirs if not d.remote and not os.path.isdir(d.path)]


def has_summaries(path: str) -> bool:
    """Whether an event file is under `path` (at most `_SCAN_LIMIT` entries looked at)."""
    seen = 0
    for _, dirs, files in os.walk(path):
        seen += len(dirs) + len(files)
        if any(name.startswith(_EVENTS) for name in files):
            return True
        if seen > _SCAN_LIMIT:
            return False
    return False


def logdir_args(logdirs: list[LocalLogdir]) -> list[str]:
    """`--logdir=DIR` for one directory; `--logdir_spec=name:dir,...` for several jobs."""
    if len(logdirs) == 1:
        return [f"--logdir={logdirs[0].path}"]
    for d in logdirs:
        if "," in d.path:
            raise InputError(f"{d.what} {d.path!r} has a comma, which TensorBoard's "
                             "--logdir_spec cannot take: serve one job at a time")  # fmt: skip
    return ["--logdir_spec=" + ",".join(f"{d.name}:{d.path}" for d in logdirs)]
