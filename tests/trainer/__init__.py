"""The trainer library (`taas`): hooks and their order, the Keras and graph engines, strategies,
checkpoints, exit codes, flags, stopping, the lean server, with real TensorFlow processes in
the clusters they build."""
