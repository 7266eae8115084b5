"""TensorFlow 2 (a ``tf.distribute`` strategy from the job's shape): ``KerasTrainer``.

``trainer`` (the public class: ``hooks`` + ``main()``), ``hooks`` (what users override and
call), ``engine`` (KerasEngine: one task's part), ``strategies`` (which strategy and role, pure),
``fit`` (Keras ``fit`` as the loop: callbacks, validation, epochs, the step loss, Keras 3),
``own_fit`` (TaaS's own epochs for Keras 3 models where Keras 3's ``fit`` cannot run),
``steps`` (the custom step and the in-order step scheduling both loops share),
``checkpoints`` (checkpoints, summaries, SIGTERM), ``exports`` (SavedModels: at once, or by
every worker together under MultiWorkerMirroredStrategy), ``evaluator`` (the evaluator task).
Never imports ``taas.graph``.
"""
