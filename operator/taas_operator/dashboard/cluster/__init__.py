"""The dashboard's jobs from a cluster: Kubernetes watches, as one identity, nothing polled.

source.ClusterSource        the Source (dashboard.source) over the modules below
follow                      the watches kept going: 410 re-list, outage back-off
joblist                     the jobs list: cluster-wide, or one watch per namespace
scopes                      which namespaces a person may list TFJobs in, when not all
jobwatches                  one job page's TFJob, pods and events, shared and capped
logs                        followed pod logs, merged with `taas run`'s prefixes
rbac                        SelfSubjectAccessReviews and the TFJob client's actions
"""

from taas_operator.dashboard.cluster.source import ClusterSource

__all__ = ["ClusterSource"]
