"""`taas run`: TFJobs as local processes (the local kubelet, its private network, exits,
signals, restarts, progress, the examples), with real TensorFlow where marked."""
