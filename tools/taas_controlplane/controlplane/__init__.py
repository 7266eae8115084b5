"""A control plane on this machine: etcd and kube-apiserver, for a test, a benchmark, a whole
cluster or the simulated one.

    etcd_apiserver.py   ControlPlane: etcd + kube-apiserver on free 127.0.0.1 ports, their CA,
                        RBAC and kubeconfigs (`taas-controlplane up`)
    certificates.py     a throw-away certificate authority and the key pairs it signs
"""
