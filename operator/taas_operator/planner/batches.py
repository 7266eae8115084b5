"""How much of a job one pass builds or reads at once: bounded, whatever the job's size.

    pod_batch(pod_bytes) -> int        # pods one pass builds, each holding about `pod_bytes`
    list_page(replicas) -> int         # pods of a job of `replicas` per page of a LIST
    MAX_BATCH                          # objects of one kind one pass creates at most

Every pod of a job of N replicas carries the job's cluster spec (TF_CONFIG and the classic host
lists name all N hosts), so a pod grows with N and the job's pods together with N squared.
Built all at once, the missing pods of one job held memory in N squared; a pass builds them in
batches instead: at most MAX_BATCH (the most Kubernetes' ReplicaSet controller creates in one
sync, its `burstReplicas`) and at most BATCH_BYTES of pod manifests, so the memory of a pass grows
linearly with N. The plan then asks to run again at once (`Plan.requeue_at`), and the next pass
builds the next batch. The executor creates a batch in slow-start rounds (`SLOW_START`, then
twice as many each round, as Kubernetes' Job and ReplicaSet controllers do), stopping at the
first round with a failure, so a refusal (a quota, an admission webhook) costs a few calls, not a
batch. A LIST of such pods is read a page at a time, about LIST_BYTES a page.
"""

from __future__ import annotations

from typing import Final

MAX_BATCH: Final = 500
BATCH_BYTES: Final = 32 * 2**20
#: Creations in the first round of a batch; each later round makes twice as many.
SLOW_START: Final = 16
LIST_BYTES: Final = 16 * 2**20
#: Bytes a pod holds per replica of its job: its host in TF_CONFIG and in a classic list
#: (`<job>-<type>-<i>.<namespace>.svc:<port>` twice, quoted; longer with long names).
_HOST_BYTES: Final = 2 * 64
_MIN_PAGE: Final = 10
_MAX_PAGE: Final = 500


def pod_batch(pod_bytes: int) -> int:
    """How many pods of about `pod_bytes` each one pass builds (at least 1)."""
    return max(1, min(MAX_BATCH, BATCH_BYTES // max(pod_bytes, 1)))


def list_page(replicas: int) -> int:
    """How many pods of a job of `replicas` replicas to read per page of a LIST."""
    return max(_MIN_PAGE, min(_MAX_PAGE, LIST_BYTES // max(replicas * _HOST_BYTES, 1)))
