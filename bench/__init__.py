"""Benchmarks of TaaS: the operator against Kubeflow's training-operator (`bench.operator`, and
on a simulated cluster of 1,000 nodes `bench.scale`), the trainer library's costs
(`bench.trainer`) and the dashboard (`bench.dashboard`), gang scheduling (`bench.scheduling`)
and Katib's trials (`bench.katib`). What they share (controllers, the job-shape builder, CPU
and memory from /proc, the apiserver's counts, the watch clock, the tables) is `bench.harness`.
Run from the repository root; see bench/README.md.

Where a benchmark measures CPU: a controller's process tree is read from /proc by
`bench.harness.procstats.sample_tree` (user + system seconds, RSS), sampled through a run by its
`PeakSampler`; each benchmark reads it before and after what it measures (bench.operator.measure,
bench.scale.stage)."""
