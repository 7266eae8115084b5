"""The `taas-controlplane` tools themselves: the Go binaries' builds, a control plane's start
and stop, the registry, storage classes, Katib's objects, the node's own images, `env`, the
cluster's preflight (most on a real control plane; none needs a node)."""
