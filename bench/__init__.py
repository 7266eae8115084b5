"""Benchmarks of TaaS: the operator against Kubeflow's training-operator (`bench.operator`, and
on a simulated cluster of 1,000 nodes `bench.scale`), the trainer library's costs
(`bench.trainer`) and the dashboard (`bench.dashboard`). Run from the repository root; see
bench/README.md."""
