"""TensorFlow 2 (a ``tf.distribute`` strategy from the job's shape): ``KerasTrainer``.

``trainer`` (the public class: ``hooks`` + ``main()``), ``hooks`` (what users override and
call), ``engine`` (KerasEngine: one task's part), ``strategies`` (which strategy and role, pure),
``fit`` (Keras ``fit`` as the loop: callbacks, validation, epochs, the step loss, Keras 3),
``steps`` (the custom step, feeding the shared loop), ``checkpoints`` (checkpoints,
summaries, SIGTERM), ``exports`` (SavedModels: at once, or by every worker together under
MultiWorkerMirroredStrategy), ``evaluator`` (the evaluator task). Never imports ``taas.graph``.
"""
