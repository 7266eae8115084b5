"""The tools around TaaS (`taas-controlplane`): real Kubernetes built from Go modules and run on
this machine, for the tests, the benchmarks and users, and the images built without Docker.

Inside, by what each part does (a module imports only from groups further down, but for the
command on top; pyproject.toml's `taas_controlplane layers` contract gives the exact layers):

    __main__.py     the `taas-controlplane` command: build, images, crd, env, cluster, sim
    userenv.py      `taas-controlplane env`: this project's helm and kubectl first on PATH
  A cluster and its add-ons:
    cluster.py      a whole cluster of one node or several: start, use, stop (`cluster up`)
    registry.py     its image registry (CNCF distribution, TLS)
    storage.py      its storage classes (rancher's local-path-provisioner)
    scheduling/     gang scheduling beside it: scheduler-plugins' coscheduling and Kueue
    katib/          hyperparameter search beside it: Katib's controller, database, webhooks
    addons.py       its own API objects: RBAC of CoreDNS and kube-router, the kube-dns Service
    runlock.py      the machine's one cluster: its lock and the record of its last run
    hoststate.py    what a run leaves on the host, and the scrub that removes it
    foreground.py   `Parts`, the base of everything started and stopped as one; a cluster
                    held until Ctrl-C
    hostparts.py    processes on the host serving one control plane (schedulers, Katib)
  A node and its runtime:
    nodes.py        one node: its container runtime and its components' processes
    components.py   the node's components' command lines and files (kubelet, kube-proxy,
                    CoreDNS, kube-router, the scheduler and controller-manager)
    runtime.py      containerd and runc, from Debian's packages
    nodens.py       a node of a many-node cluster: its own network namespace
    hostnet.py      the cluster's bridge on the host, addresses and routes
    oci.py          the node's own small images, made by hand from busybox
  The control plane:
    launcher.py     etcd + kube-apiserver on free 127.0.0.1 ports, their CA, RBAC, kubeconfigs
    pki.py          a throw-away certificate authority
  The simulated cluster:
    sim/            kwok's simulated nodes behind the real control plane (`sim up`)
  Building:
    binaries.py     every Go binary, built once from its module into a cache keyed by version
    go/             the small wrapper modules some binaries are built from (not Python)
    images.py       the Dockerfile's operator and trainer images, built with buildah, pushed
    baseimage.py    their Debian base image, from debootstrap
    wheelhouse.py   the wheels the images install, downloaded once
    containers.py   buildah and podman on one private image store
    crd/            the TFJob CRD generated from its base and Kubernetes' pod schema

Where to start reading:
- A node's kubelet: its command line and config are `taas_controlplane.components.kubelet`,
  started by `taas_controlplane.nodes.Node`, which `taas_controlplane.cluster.Cluster.start`
  makes for each node.
- A control plane for a test: `taas_controlplane.launcher.ControlPlane` (tests/conftest.py's
  `control_plane` fixture); its binaries come from `taas_controlplane.binaries.ensure`.
- A benchmark's cluster: bench/ runs its controllers on a `ControlPlane` or on
  `taas_controlplane.sim.cluster.SimCluster` and measures their CPU and memory from /proc in
  bench/operator/procstats.py.
- A TFJob's pods and `taas run`'s processes: `taas_operator` (its own map).
"""
