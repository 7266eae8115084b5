"""An in-memory Kubernetes apiserver for the operator's reconcile logic (the fast tier).

    store = Store()                                  # the objects, their versions, the watches
    transport = FakeTransport(store)                 # `apiserver.transport.Transport`'s interface
    status, data = store.handle(method, path, query, body, content_type)   # blocking, any thread

What it has, as the real apiserver does it: uids; one resourceVersion counter for every write;
optimistic concurrency (a stale resourceVersion, or a uid precondition that names another
object, is 409 Conflict; an update of a custom resource without a resourceVersion is 422);
404 NotFound and 409 AlreadyExists; metadata.generation bumped by a spec change; the status
subresource apart from the object (a write to one leaves the other as stored); namespaces
(creating in a missing one is 404, in a terminating one 403); label selectors (=, ==, !=, in,
notin, exists, !exists) and field selectors (=, ==, != on any dotted field); lists with `limit`
and `continue` served from one snapshot; watches from a resourceVersion (ADDED, MODIFIED,
DELETED, an object leaving a selector is DELETED for that watch, BOOKMARK at the end when
asked, an ERROR 410 Gone event for a version older than the event window); deletes with uid and
resourceVersion preconditions; finalizers (a delete sets deletionTimestamp until the last is
removed); a pod bound to a node and still running waits for its kubelet (grace period) unless
deleted with grace 0; JSON patch, merge patch, and strategic merge patch of maps and of
primitive lists (`$deleteFromPrimitiveList`); the defaults the operator's comparisons can see
(pods: phase Pending, restartPolicy, dnsPolicy, ...; services: clusterIP, type, port protocol
and targetPort; NetworkPolicies: policyTypes, port protocol); ownerReferences stored.

What it lacks (tests that need these stay on the real apiserver): CRD schema validation,
defaulting and pruning; admission (RBAC, Pod Security, quotas); object validation beyond
names; garbage collection by ownerReferences (the real test control plane runs no
controller-manager either); server-side apply; watch timing and the watch cache's own rules.
"""

from tests.harness.fakeapi.store import Store
from tests.harness.fakeapi.transport import FakeTransport

__all__ = ["FakeTransport", "Store"]
