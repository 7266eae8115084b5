"""SavedModel exports: at once, or, under MultiWorkerMirroredStrategy, by every worker together.

    save_model(model, target)                 the one save (Keras 3: model.export)
    ExportRequests                            what export_model asked for, per task
    export_together(requests, model, task, is_chief)   MWMS: after after_train

Under MultiWorkerMirroredStrategy a save is collective: a chief that saves alone waits for
peers that never join (a hang). So ``export_model`` there only records the request; after
``after_train`` the chief publishes its directories through TensorFlow's coordination service
(a key every worker reads), and every worker saves each one together: the chief into it, the
others into a scratch directory they delete. Whichever tasks called ``export_model`` (the
chief only, as the docs show, or all), exactly one SavedModel is written per directory the chief
named. Importing this module does not import TensorFlow.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

#: The coordination service key of the chief's export directories (a JSON list).
EXPORTS_KEY = "taas_exports"


def save_model(model: Any, target: str) -> None:
    """Write ``model`` as a SavedModel in ``target``."""
    if type(model).__module__.startswith("keras."):
        model.export(target)  # Keras 3: save() writes .keras files, export() SavedModels
    elif hasattr(model, "save"):
        model.save(target)
    else:
        import tensorflow as tf

        tf.saved_model.save(model, target)


@dataclass
class ExportRequests:
    """``export_model`` calls recorded on one MultiWorkerMirroredStrategy worker."""

    requests: list[tuple[Any, str]] = field(default_factory=list)

    def add(self, model: Any, export_dir: str) -> None:
        self.requests.append((model, os.path.abspath(export_dir)))


def export_together(requests: ExportRequests, model: Any, task: str, is_chief: bool) -> None:
    """Every MultiWorkerMirroredStrategy worker, after ``after_train``: save each directory the
    chief asked for, together (the chief into it, the others into scratch). A worker saves the
    model it passed to ``export_model`` at the same position, else ``model``."""
    from tensorflow.python.eager import context  # the key-value store has no public alias

    if is_chief:
        dirs = [path for _, path in requests.requests]
        context.context().set_config_key_value(EXPORTS_KEY, json.dumps(dirs))
    else:
        dirs = json.loads(context.context().get_config_key_value(EXPORTS_KEY))
    for position, export_dir in enumerate(dirs):
        own = requests.requests[position][0] if position < len(requests.requests) else model
        target = export_dir if is_chief else tempfile.mkdtemp(prefix="taas-export-")
        try:
            save_model(own, target)
        finally:
            if not is_chief:
                shutil.rmtree(target, ignore_errors=True)
        if is_chief:
            print(f"[{task}] exported a SavedModel to {export_dir}", flush=True)


__all__ = ["EXPORTS_KEY", "ExportRequests", "export_together", "save_model"]
