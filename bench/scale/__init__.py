"""The simulated-cluster benchmark (issue 22): TaaS, Kubeflow's training-operator v1.8.1 and
the floor, each on its own fresh simulated cluster of the same shape (`taas_controlplane.sim`).

    python -m bench.scale [--quick] [--scenarios d,e,f] [--controllers taas,kubeflow,floor]

scenarios (what is run), stage (a fresh cluster, a contestant, its counters), load ((d), (e)),
silent_nodes ((f): nodes that stop heart-beating), results, report (this benchmark's tables);
the watch of pods and TFJobs is bench.harness.clock.
"""
