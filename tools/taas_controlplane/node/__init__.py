"""One node of a real cluster on this machine (root): its container runtime, its components'
processes, its network, and what a run leaves behind.

    node.py               Node: one node's containerd and its components' processes; in a
                          many-node cluster, in its own network namespace
    component_commands.py the command lines and files of kubelet, kube-proxy, CoreDNS,
                          kube-router, kube-scheduler and kube-controller-manager
    containerd.py         containerd and runc, from Debian's packages
    namespace.py          a node of a many-node cluster: its own network namespace
    host_scrub.py         what a run leaves on the host, and the scrub that removes it
    host_network.py       the cluster's bridge on the host, addresses and routes
"""
