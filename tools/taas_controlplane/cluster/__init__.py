"""A whole cluster on this machine (`taas-controlplane cluster up`) and its add-ons, side by side.

cluster.py           Cluster: a control plane, nodes, add-ons; started, used, stopped
registry.py          its image registry (CNCF distribution, TLS)
storage.py           its storage classes (rancher's local-path-provisioner)
scheduling/          gang scheduling: scheduler-plugins' coscheduling and Kueue (also used
                     by the simulated cluster)
katib/               hyperparameter search: Katib's controller, database, webhooks
system_objects.py    its own API objects: RBAC of CoreDNS and kube-router, the kube-dns
                     Service
addon_processes.py   HostParts: processes on the host serving one control plane (the
                     schedulers, Katib, the storage provisioner)
machine_lock.py      the machine's one cluster: its lock and the record of its last run
"""
