"""A simulated cluster for scale and node-failure tests: real etcd, kube-apiserver,
kube-scheduler and kube-controller-manager, with kwok playing N kubelets.

    SimCluster(nodes, gpu_nodes, directory=None, timings=None)   (cluster.py)
    Timings.for_tests() / Timings.defaults()                     (command_lines.py)
    node_manifests(nodes, gpu_nodes)                             (node_objects.py)
    pod annotations that drive a fake container (stages.yaml):   (annotations.py)
        EXIT_CODE, RUN_SECONDS, START_SECONDS, REASON

`taas-controlplane sim up --nodes N [--gpu-nodes M]` runs one from the command line (see
docs/simulated-cluster.md).
"""
