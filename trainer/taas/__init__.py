"""TaaS trainer library: write the model, get distributed TensorFlow training.

Two hook classes, the same hook names: :class:`KerasTrainer` (TensorFlow 2: a Keras model under
the ``tf.distribute`` strategy the job's shape picks, ``fit`` or a custom step; see
``taas.keras.trainer`` and ``taas.keras.strategies``) and :class:`DistributedTrainer` (graph mode,
``tf.compat.v1``, below). Subclass one (``DistributedTrainer``'s alias is
``CaicloudDistTensorflowBase``), fill in the hooks, call ``MyTrainer.main()``. The same program
runs alone, under ``taas run job.yaml`` and in a ``kubeflow.org/v1`` TFJob: the base class reads
the cluster, starts the gRPC server, places the variables on the PS tasks, and runs the loop.
Graph mode (``tf.compat.v1``), TensorFlow 2.21.

Example: ``examples/linear_regression/linear_regression.py`` (graph mode, the whole program;
``docs/trainer.md`` shows it) and ``examples/keras_digits/keras_digits.py`` (TensorFlow 2).

Hooks (all but ``build_model`` optional; the class docstring draws the loop):

- ``build_model(global_step, is_chief, sync, num_replicas)``: build the graph. Return the loss,
  ``(loss, optimizer)`` or a zero-argument ``loss_fn`` (one tower per GPU, gradients averaged)
  and the base class builds the train op, wrapping it in ``SyncReplicasOptimizer`` in sync mode.
  Old style (Caicloud): build the train op yourself and return the optimizer.
- ``create_optimizer()``: the optimizer when ``build_model`` returns a loss (or ``loss_fn``)
  alone; gradient descent at ``learning_rate`` by default.
- ``get_init_fn(checkpoint_path) -> fn(session) | None``: warm start; skipped when the model
  dir already has a checkpoint (a restart resumes from it instead).
- ``train(session, global_step, is_chief) -> bool``: one step (``self.train_step(session,
  feed_dict)`` runs the base-built train op and feeds the progress line).
- ``after_train(session, is_chief)``: once after the loop; evaluate, ``self.export_model``.
- ``init_model_exporter(export_dir, inputs, outputs)`` in build_model + ``export_model(session)``
  write a SavedModel (``serving_default`` signature; the chief writes it).
- ``evaluate(session, global_step)``: an ``evaluator`` task calls it for each new checkpoint.

Cluster: ``TF_CONFIG`` (ps, worker, chief, master, evaluator; also the dynamic-worker map form),
else ``PS_HOSTS/WORKER_HOSTS/CHIEF_HOSTS/JOB_NAME/TASK_INDEX``, else the same as flags
(``--ps_hosts ...``), else one local process. Chief = chief/master, else worker 0. Variables go
round-robin over the PS tasks, compute stays on the worker. A PS exits 0 once every trainer task
has signalled "done" on it; non-chief workers poll for the chief's initialisation every 0.1 s
(no 30 s stall); a sync job starts with a barrier so one worker cannot fill the first steps
alone; at the end the chief releases sync workers still waiting for a token.

Settings (``taas.TrainerSettings``): flag ``--name`` > env ``TAAS_NAME`` > TaaS 2.0 env. The
table is generated from the model (``python -m taas.settings_doc``; a test keeps it equal).

=======================  ==========================  ============================================
setting                  also read from              meaning (default)
=======================  ==========================  ============================================
max_steps                TF_MAX_STEPS                global steps to train (1000)
max_epochs                                           ...or this many epochs of steps_per_epoch:
                                                     max_steps = max_epochs x steps_per_epoch
                                                     (unset)
steps_per_epoch                                      KerasTrainer fit: steps per epoch;
                                                     validation and epoch callbacks at each end
                                                     (unset: one epoch of max_steps)
validation_steps                                     KerasTrainer fit: batches each validation
                                                     reads from create_validation_dataset (needed
                                                     with it; unset)
model_dir                TF_LOGDIR, TF_MODEL_DIR,    checkpoints and summaries (chief writes)
                         --logdir, --train_dir       (/tmp/taas-model)
checkpoint_path                                      warm start for get_init_fn (none)
save_checkpoints_secs    TF_SAVE_CHECKPOINTS_SECS    chief checkpoint period, 0 = off (60)
save_checkpoints_steps   TF_SAVE_CHECKPOINTS_STEPS   ...or every N steps (wins if set; unset)
save_summaries_steps     TF_SAVE_SUMMARIES_STEPS     chief summaries every N steps, 0 = off (100)
sync                     TF_SYNC                     synchronous updates (false)
replicas_to_aggregate                                sync: gradients per step (workers -
                                                     backup_workers)
backup_workers                                       sync only: steps need not wait for the
                                                     slowest N (0)
batch_size               TF_BATCH_SIZE               examples per step, for examples/s (100)
learning_rate                                        the default optimizer's (0.01)
log_every_steps                                      progress every N local steps, 0 = off (100)
log_every_secs                                       ...or every N seconds, 0 = off (0)
progress_port                                        chief serves GET /progress on this TCP port,
                                                     0 = off (2223 in a Kubernetes pod, where the
                                                     operator reads it; else off)
progress_file                                        chief also writes its progress (JSON) to
                                                     this file; taas run sets it (unset)
startup_timeout_secs                                 wait for PS, chief, new checkpoints (300)
log_device_placement                                 log the device of every op (false)
allow_soft_placement                                 fall back to a device that exists (true)
gpu_memory_growth                                    allocate GPU memory as needed (true)
gpu_memory_fraction                                  0 < f <= 1 of each GPU (unset)
visible_devices                                      sets CUDA_VISIBLE_DEVICES, e.g. "0,1"
                                                     (unset)
num_towers                                           GPUs to use (all); CPU towers if none
                                                     (unset)
=======================  ==========================  ============================================

A bad value exits 2 with ``setting 'max_steps' (TAAS_MAX_STEPS / TF_MAX_STEPS): ...``; so does
a ``TAAS_*`` variable that is a near miss of a setting's (``unknown environment variable
TAAS_MAX_STEP: did you mean TAAS_MAX_STEPS?``; other unknown ``TAAS_*`` names get a note), and
a ``model_dir`` the chief cannot create or write (checked before training starts).
``--help`` lists the settings and the program's own absl flags. Flags the settings do not take
go to the program's absl flags (``tf.compat.v1.app.flags``, defined at import); one left over
that is a near miss of a known flag (``--max_step``, ``--sycn``) exits 2 with ``unknown flag
--max_step: did you mean --max_steps?``. Other unknown flags may be for the program's own
parser (argparse reading ``sys.argv``), so they only get a note (``taas.core.flags``).

Re-running a job on a model dir already at ``max_steps`` trains nothing: each trainer prints
``model dir ... already at global step 300 >= max_steps 300: nothing to train (resumed from
checkpoint)``, with the fix (delete the directory or raise ``TF_MAX_STEPS``), and every task
exits 0. A restart below ``max_steps`` resumes from the checkpoint as before.

Progress, every N steps or seconds, from every task::

    [worker:1] step 200 global 410/1000 loss 0.3124 | 2450.1 ex/s 0.041 s/batch | ETA 24s

The chief also publishes it (``taas.core.publish``): in a Kubernetes pod it serves ``GET /progress``
on port 2223 (``progress_port``), which the operator reads into the TFJob's
``status.progress`` (the PROGRESS and ETA columns of ``kubectl get tfjobs``); under ``taas run``
it writes the same document to ``progress_file``. ``taas.log_scalar(name, value)`` (or
``self.log_scalar`` in a hook) adds any scalar, e.g. an accuracy: its last five values are
published with it.

Exit codes (for the TFJob ``ExitCode`` restart policy; see ``taas.core.exit_codes``):

====  ==========================================================  =========================
code  meaning                                                     ExitCode policy
====  ==========================================================  =========================
0     training finished (every task, the PS included)             success
1     bug in user code or the model (traceback printed)           permanent: job fails
2     bad setting, flag, TF_CONFIG, ``TAAS_*`` variable or        permanent: job fails
      unwritable model_dir (message names the field)
3     loss became NaN or infinite (message says what to try);     permanent: job fails
      stopped before that step's update: no checkpoint or export
130   interrupted (SIGINT)                                        retryable
138   lost peer: PS unreachable, session aborted/unavailable,     retryable: pod recreated,
      a heartbeat or TensorFlow's coordination service lost,      resumes from checkpoint
      chief not ready within startup_timeout_secs
137   SIGKILL (OOM, node loss) / 143 SIGTERM, set by the kernel   retryable
      (TensorFlow 2, graph-mode chief: on SIGTERM a checkpoint first)
====  ==========================================================  =========================

Layout (layers, each importing only those below it; import-linter checks it, and that
``core`` never imports TensorFlow)::

    taas            __init__ (these names, loaded lazily), program (taas.run: engine_for picks
                    the engine), settings_doc; entry, dist_base (Caicloud compatibility paths)
    taas.graph      graph mode: trainer (DistributedTrainer = hooks + main), hooks, engine,
                    model, steps, towers, devices, session, exporter, evaluator
    taas.keras      TensorFlow 2: trainer (KerasTrainer = hooks + main), hooks, engine, fit
                    (Keras fit as the loop), own_fit (TaaS's epochs for Keras 3 where its fit
                    cannot run), strategies, steps, checkpoints, exports
                    (SavedModels; together under MWMS), evaluator (graph and keras:
                    independent)
    taas.runtime    TensorFlow services both engines use: coordination (PS serving, "done",
                    start barrier), preflight (the model dir check), keepalive (gRPC's, on a
                    coordinator's channels), lean_server (serving without TF's Python API)
    taas.core       no TensorFlow: settings, placement (where this task sits in the cluster),
                    flags, exit_codes, engine (protocol, step types), loop, stopping (SIGTERM),
                    progress_log, publish, checkpoint_wait (the evaluator's wait), launch
                    (main(): settings, cluster, flags, engine, exit code)

Porting Caicloud code: ``from taas import dist_base`` (``dist_base.CaicloudDistTensorflowBase``)
and ``from taas import entry; entry.start(MyModel)``; use ``tensorflow.compat.v1``
(see ``examples/caicloud_mnist``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CaicloudDistTensorflowBase",
    "ClusterInfo",
    "DistributedTrainer",
    "ExitCode",
    "KerasTrainer",
    "SettingsError",
    "TrainerSettings",
    "log_scalar",
    "run",
]

_LAZY = {
    "DistributedTrainer": "taas.graph.trainer",
    "CaicloudDistTensorflowBase": "taas.graph.trainer",
    "KerasTrainer": "taas.keras.trainer",
    "run": "taas.program",
    "ClusterInfo": "taas.core.placement",
    "ExitCode": "taas.core.exit_codes",
    "SettingsError": "taas.core.settings",
    "TrainerSettings": "taas.core.settings",
    "log_scalar": "taas.core.publish",
}


def __getattr__(name: str) -> Any:
    """Import TensorFlow only when the base class is first used."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'taas' has no attribute {name!r}")
