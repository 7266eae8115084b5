"""Operator benchmark: TaaS's operator, Kubeflow's training-operator v1.8.1 (its default single
controller thread, and 8 threads) and a plain-client floor, each on its own fresh kube-apiserver
+ etcd, on the same TFJob workloads.

    python -m bench.operator [--quick] [--workloads a,b,c,d] [--controllers ...] [--profile D]

Modules: `workloads` (the TFJobs), `controllers` (how each controller is installed and started),
`floor` (the no-controller client), `observer` (watches pods and services appear), `procstats`
(RSS and CPU of a process tree), `apimetrics` (apiserver `/metrics` and audit log counts),
`measure` (one controller x one workload on a fresh control plane, measured), `restart`
(workload d: a controller restarted among thousands of jobs), `profiler` (py-spy recordings and
their summary), `report` (the table).
"""
