"""The simulated-cluster benchmark (issue 22): TaaS, Kubeflow's training-operator v1.8.1 and
the floor, each on its own fresh simulated cluster of the same shape (`taas_controlplane.sim`).

    python -m bench.scale [--quick] [--scenarios d,e,f] [--controllers taas,kubeflow,floor]

scenarios (what is run), stage (a fresh cluster, a contestant, its counters), clock (the
harness's watch of pods and TFJobs), load ((d), (e)), nodeloss ((f)), results, report.
"""
