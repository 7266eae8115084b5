"""End to end on a real cluster (root; `node` marks): kubelet, containerd, CoreDNS,
kube-router run the pods; the chart's operator, the examples with TensorFlow, node loss,
storage, gang scheduling with Kueue and coscheduling, Katib, NetworkPolicies, the registry,
the user's view (`taas logs|get|wait`). One cluster at a time; 3-node tests last."""
