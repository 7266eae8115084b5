"""Operator benchmark: TaaS's operator, Kubeflow's training-operator v1.8.1 (its default single
controller thread, and 8 threads) and a plain-client floor, each on its own fresh kube-apiserver
+ etcd, on the same TFJob workloads.

    python -m bench.operator [--quick] [--workloads a,b,c,d] [--controllers ...] [--profile D]

Modules: `floor` (the no-controller client), `measure` (one controller x one workload on a fresh
control plane, measured), `restart` (workload d: a controller restarted among thousands of
jobs), `report` (the table); `e2e`, `nodeloss`, `training`, `bigjob`, `fairness`: the other
workloads; `jobbytes`: what one job puts into etcd, by kind. The workloads, controllers,
observer, /proc and apiserver counts and py-spy profiles they use are bench.harness's.
"""
