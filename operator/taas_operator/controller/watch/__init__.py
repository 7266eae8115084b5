"""What the operator knows between passes, kept by its watches: `informer` (LIST then WATCH one
kind, re-listing after 410), the caches the watch events fill (`jobcache`: every TFJob;
`children`: every job's pods, services and NetworkPolicies), `expectations` (the watch events
that only echo the operator's own writes, Kubernetes' "expectations") and `peering` (whether this
replica may act). Nothing is imported here."""
