"""The tools around TaaS (`taas-controlplane`): real Kubernetes built from Go modules and run on
this machine, for the tests, the benchmarks and users, and the images built without Docker.

Inside, top layer first: each imports only from the layers below it (pyproject.toml's
`taas_controlplane layers` contract and one contract per subpackage say the same; `A | B`:
neither imports the other). Each subpackage's __init__ is its own map.

    __main__.py     the `taas-controlplane` command: build, images, crd, env, cluster, sim, up
    userenv.py      `taas-controlplane env`: this project's helm and kubectl first on PATH
    crd/            the TFJob CRD generated from its base and Kubernetes' pod schema
    sim/            a simulated cluster: kwok's nodes behind a real control plane (`sim up`)
    cluster/        a whole cluster of one node or several (`cluster up`) and its add-ons side
                    by side: the image registry, storage classes, scheduling/ (coscheduling,
                    Kueue), katib/, the cluster's own API objects; the machine's one-cluster lock
    node/           one node: containerd and runc, its components' command lines (kubelet,
                    kube-proxy, CoreDNS, kube-router), its network namespace, the host's
                    bridge, and the scrub of what a run leaves on the host
    controlplane/   etcd + kube-apiserver on free 127.0.0.1 ports, with a throw-away CA
    build/          every Go binary built once into a cache (go/: the wrapper modules), the
                    Dockerfile's images with buildah, their Debian base and wheels, the
                    node's own small images from busybox
    foreground.py   a cluster held until Ctrl-C, SIGTERM or one of its parts exits
    parts.py        `Parts`, the base of everything started and stopped as one

Where to start reading:
- A node's kubelet: its command line and config are
  `taas_controlplane.node.component_commands.kubelet`, started by
  `taas_controlplane.node.node.Node.spawn`, which `taas_controlplane.cluster.cluster.Cluster.start`
  calls for each node.
- A control plane for a test: `taas_controlplane.controlplane.etcd_apiserver.ControlPlane`
  (tests/conftest.py's `control_plane` fixture); its binaries come from
  `taas_controlplane.build.binaries.ensure`.
- A benchmark's cluster: bench/ runs its controllers on a `ControlPlane` or on
  `taas_controlplane.sim.cluster.SimCluster` and measures their CPU and memory from /proc in
  bench/harness/procstats.py.
- A TFJob's pods and `taas run`'s processes: `taas_operator` (its own map).
"""
