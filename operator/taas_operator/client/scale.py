"""`taas scale` and `TFJobClient.scale_job`: a TFJob's Worker replicas through its scale
subresource (`PATCH .../tfjobs/NAME/scale`), as `kubectl scale` sets them.

    checked_workers(workers) -> int              # Invalid outside 0..MAX_REPLICAS
    scale_workers(conn, namespace, name, workers) -> int   # the count the apiserver stored

The operator then makes the workers of the new indices or deletes those past the count, and
touches no other pod (docs/tfjob-api.md, "The scale subresource").
"""

from __future__ import annotations

from taas_operator.api.constants import MAX_REPLICAS, PLURAL
from taas_operator.api.resources import TFJOB
from taas_operator.apiserver.blocking import Connection
from taas_operator.apiserver.errors import Invalid, Request

__all__ = ["checked_workers", "scale_workers"]


def checked_workers(workers: object) -> int:
    """`workers` if it is a Worker count the CRD accepts (0 to MAX_REPLICAS), else Invalid."""
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise Invalid(f"workers must be a whole number, not {workers!r}; fix: e.g. 4")
    if not 0 <= workers <= MAX_REPLICAS:
        raise Invalid(
            f"workers must be from 0 to {MAX_REPLICAS} (the replica bound of a TFJob), "
            f"not {workers}; fix: give a count in that range"
        )
    return workers


def scale_workers(conn: Connection, namespace: str, name: str, workers: int) -> int:
    """PATCH the job's scale to `workers` (checked names); Invalid for a job without a
    'Worker' key, whose scale the apiserver cannot read or write."""
    job = conn.call(Request("get", PLURAL, namespace, name), "GET", TFJOB.path(namespace, name))
    if "Worker" not in ((job.get("spec") or {}).get("tfReplicaSpecs") or {}):
        raise Invalid(
            f"TFJob {namespace}/{name} has no replica type spelled 'Worker' (the scale "
            "subresource sets spec.tfReplicaSpecs.Worker.replicas); fix: change the other "
            "types' replicas in the TFJob itself, or spell its workers' key 'Worker'"
        )
    scale = conn.call(
        Request("patch", f"{PLURAL}/scale", namespace, name),
        "PATCH",
        TFJOB.path(namespace, name, "scale"),
        body={"spec": {"replicas": workers}},
        content_type="application/merge-patch+json",
    )
    return int((scale.get("spec") or {}).get("replicas") or 0)
