"""A job's TensorBoard: the pod's program serving summaries, the chief's model directory, and
`taas tensorboard` on local summaries."""
