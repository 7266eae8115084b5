"""Benchmarks of TaaS: the operator against Kubeflow's training-operator (`bench.operator`) and
the trainer library's costs (`bench.trainer`). Run from the repository root; see bench/README.md."""
