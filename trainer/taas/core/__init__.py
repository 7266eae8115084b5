"""The engine-neutral core of the trainer: no TensorFlow here (import-linter checks it).

``settings`` (TrainerSettings: flags, env), ``placement`` (where this task sits in the training
cluster: TF_CONFIG and friends), ``flags`` (the program's own flags, ``--help``, near misses),
``exit_codes``, ``engine`` (the Engine protocol and the step types), ``loop`` (the step loop
every engine shares), ``progress_log`` (the progress lines), ``publish`` (the progress document,
``log_scalar``), ``checkpoint_wait`` (the evaluator's wait for new checkpoints), ``launch``
(``main()``: settings, cluster, flags, engine, exit code).
Imports nothing of ``taas`` outside ``taas.core``.
"""
