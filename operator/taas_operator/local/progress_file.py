"""Training progress under `taas run`: the chief writes it to a file, the runner reads it.

    progress = ProgressFile()             # a private directory for one job
    progress.env(manifest) -> dict        # what the chief's process gets (others: nothing)
    progress.read() -> ProgressReport | None   # the newest document, None when unchanged
    progress.close()                      # the directory removed

The replicas run in a private network namespace (`local.netns`), where the runner cannot
connect to the chief's 127.0.0.1; a file in a directory both see needs no network. The chief
(`taas.core.publish`) rewrites it atomically at most once a second; the runner re-reads it only when
its modification time changed. What is done with a report is the operator's code:
`planner.fold_progress`, with `INTERVAL_S` instead of the operator's 30 s (nothing is written to
an apiserver here), and the same PROGRESS and ETA columns (`planner.progress_columns`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from taas_operator.api import ProgressReport
from taas_operator.api.constants import (
    DEFAULT_CONTAINER_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    PROGRESS_FILE_ENV,
    PROGRESS_PORT_ENV,
    ReplicaType,
)

#: How often the table's PROGRESS and ETA may change (the operator's status: every 30 s).
INTERVAL_S = 1.0


class ProgressFile:
    """The progress file of one job's chief."""

    def __init__(self, chief: tuple[ReplicaType, int] | None) -> None:
        self.chief = chief
        self.directory = Path(tempfile.mkdtemp(prefix="taas-progress-"))
        self.path = self.directory / "progress.json"
        self._seen: int | None = None

    def env(self, manifest: dict[str, Any]) -> dict[str, str]:
        """Environment for a pod's process: the file for the chief; and no HTTP server (nobody
        could reach it) unless the pod's own env asks for one."""
        labels = manifest["metadata"].get("labels") or {}
        slot = (labels.get(LABEL_REPLICA_TYPE), labels.get(LABEL_REPLICA_INDEX))
        chief = self.chief and (self.chief[0].lower(), str(self.chief[1]))
        if slot != chief:
            return {}
        env = {PROGRESS_FILE_ENV: str(self.path)}
        containers = (manifest.get("spec") or {}).get("containers") or []
        own: dict[str, Any] = next(
            (c for c in containers if c.get("name") == DEFAULT_CONTAINER_NAME), {}
        )
        if not any(e.get("name") == PROGRESS_PORT_ENV for e in own.get("env") or []):
            env[PROGRESS_PORT_ENV] = "0"
        return env

    def read(self) -> ProgressReport | None:
        """The document, when the file changed since the last read (else None)."""
        try:
            changed = os.stat(self.path).st_mtime_ns
        except OSError:
            return None
        if changed == self._seen:
            return None
        self._seen = changed
        try:
            return ProgressReport.model_validate_json(self.path.read_bytes())
        except (OSError, ValidationError, ValueError):
            return None  # a program writing something else there: no progress, nothing lost

    def close(self) -> None:
        """Remove the directory."""
        with contextlib.suppress(OSError):
            shutil.rmtree(self.directory)
