// Module that builds the upstream kubectl (k8s.io/kubernetes cmd/kubectl) from the Go module proxy.
module taas.dev/controlplane/kubectl

go 1.24.0

require (
	k8s.io/client-go v0.34.4
	k8s.io/component-base v0.34.4
	k8s.io/kubectl v0.34.4
)
