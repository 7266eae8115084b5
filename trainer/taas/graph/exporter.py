"""SavedModel export for graph-mode trainers (Caicloud's ``init_model_exporter``/``export_model``).

Prepare in ``build_model``; save in ``after_train``. By then the training graph is finalised
(and its variables live on the PS tasks), so :class:`ModelExporter` snapshots the graph as a
device-free MetaGraph when it is created, and on :meth:`ModelExporter.save` writes the variables
to a temporary checkpoint, rebuilds the snapshot in a fresh local graph, restores them there and
writes the SavedModel with one ``serving_default`` predict signature.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from typing import Any


class ModelExporter:
    """Snapshots the graph now; writes the SavedModel on :meth:`save`."""

    def __init__(
        self,
        export_dir: str,
        input_tensors: Mapping[str, Any],
        output_tensors: Mapping[str, Any],
        assets_collection: Any = None,
        legacy_init_op: Any = None,
        main_op: Any = None,
    ) -> None:
        self.export_dir = export_dir
        self.inputs = {alias: t.name for alias, t in input_tensors.items()}
        self.outputs = {alias: t.name for alias, t in output_tensors.items()}
        op = main_op if main_op is not None else legacy_init_op
        self.main_op = op.name if op is not None else None
        self.assets = [t.name for t in assets_collection] if assets_collection else None
        import tensorflow as tf  # here, not at import (see taas.graph.hooks)

        v1 = tf.compat.v1
        self.meta_graph = v1.train.export_meta_graph(clear_devices=True)
        self.saver = v1.train.Saver(sharded=False, allow_empty=True)

    def save(self, session: Any) -> str:
        """Write the SavedModel (replacing an older one); return its directory."""
        scratch = tempfile.mkdtemp(prefix="taas-export-")
        try:
            checkpoint = self.saver.save(
                raw_session(session),
                os.path.join(scratch, "model"),
                write_meta_graph=False,
                write_state=False,
            )
            self._write(checkpoint)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return self.export_dir

    def _write(self, checkpoint: str) -> None:
        import tensorflow as tf

        v1 = tf.compat.v1
        graph = tf.Graph()
        with graph.as_default():
            v1.train.import_meta_graph(self.meta_graph, clear_devices=True)
            restorer = v1.train.Saver(allow_empty=True)
            signature = v1.saved_model.signature_def_utils.predict_signature_def(
                inputs={a: graph.get_tensor_by_name(n) for a, n in self.inputs.items()},
                outputs={a: graph.get_tensor_by_name(n) for a, n in self.outputs.items()},
            )
            main_op = graph.get_operation_by_name(self.main_op) if self.main_op else None
            assets = [graph.get_tensor_by_name(n) for n in self.assets] if self.assets else None
            with v1.Session(graph=graph) as session:
                restorer.restore(session, checkpoint)
                if os.path.exists(self.export_dir):
                    shutil.rmtree(self.export_dir)
                builder = v1.saved_model.Builder(self.export_dir)
                builder.add_meta_graph_and_variables(
                    session,
                    [v1.saved_model.tag_constants.SERVING],
                    signature_def_map={"serving_default": signature},
                    assets_collection=assets,
                    main_op=main_op,
                    clear_devices=True,
                    strip_default_attrs=True,
                )
                builder.save()


def raw_session(session: Any) -> Any:
    """The plain session under a MonitoredSession, so hooks do not fire (public API only)."""
    if hasattr(session, "run_step_fn"):
        return session.run_step_fn(lambda step_context: step_context.session)
    return session
