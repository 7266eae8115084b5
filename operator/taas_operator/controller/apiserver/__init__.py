"""The operator's only way to the Kubernetes API: `kube.KubeClient` (JSON reads and writes of
TFJobs, pods, services, NetworkPolicies, events; watches) over `transport.Transport` (aiohttp on
the operator's event loop). Nothing is imported here."""
