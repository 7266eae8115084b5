"""The one way TaaS talks to a kube-apiserver over HTTP, for the operator, the dashboard and the
client's watches: `transport` (aiohttp requests and streams, one pool per process) and
`listwatch` (the one list-then-watch loop: 410 re-list, back-off, bookmarks).

No kopf, no official client: the callers bring the endpoint (`transport.endpoint(config)` reads
a loaded kubernetes client configuration without importing the package).
"""
