"""Graph mode (``tf.compat.v1``, between-graph replication with PS tasks): ``DistributedTrainer``.

``trainer`` (the public class: ``hooks`` + ``main()``), ``hooks`` (what users override and
call), ``engine`` (GraphEngine: one task's part), ``model`` (the training graph), ``steps``
(what ``train_step`` runs through), ``towers`` (one tower per device, averaged gradients),
``devices`` (session config, tower devices), ``session`` (session creators that do not stall),
``exporter`` (SavedModel), ``evaluator`` (the evaluator task). Never imports ``taas.keras``.
"""
