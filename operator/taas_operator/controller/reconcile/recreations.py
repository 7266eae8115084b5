"""Kubeflow's TFJob CRD prunes `status.recreations` (and `workerReplicas`): keep them in memory.

    pruned = PrunedRecreations()
    pruned.restore(key, body) -> body          # before parsing: the recreations put back
    pruned.check(key, uid, written, stored)    # after a status write: were they pruned?
    pruned.forget(key)

Kubeflow's own TFJob CRD (a migration with `crds.install=false`) has a structural status schema
without TaaS's `status.recreations`, so the apiserver prunes it from every status write. When a
write comes back without them, this notices (one warning in the log) and keeps the recreations
written, putting them back into the job before each pass, so backoffLimit still counts
recreations while the process lives; a restarted operator starts those counts at 0 (container
restarts, Kubeflow's own measure, are still counted from the pods). `status.workerReplicas`
(the Worker count the last pass planned for, `planner.scaling`) is kept the same way, so a
change of the count is seen once and the status is not written again on every pass.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from taas_operator.controller.watch.jobcache import JobKey

logger = logging.getLogger("taas_operator.controller")


#: TaaS status fields Kubeflow's CRD prunes that a pass reads back.
KEPT_FIELDS = ("recreations", "workerReplicas")


class PrunedRecreations:
    """Per job, (uid, the KEPT_FIELDS as written) where the CRD's schema pruned them."""

    def __init__(self) -> None:
        self._kept: dict[JobKey, tuple[str, dict[str, Any]]] = {}
        self._warned = False

    def restore(self, key: JobKey, body: dict[str, Any]) -> dict[str, Any]:
        """The job with the fields we wrote put back, where the stored status lost them."""
        kept = self._kept.get(key)
        status = body.get("status") or {}
        if kept is None:
            return body
        uid, fields = kept
        if (body.get("metadata") or {}).get("uid") != uid:
            return body
        lost = {k: copy.deepcopy(v) for k, v in fields.items() if k not in status}
        return {**body, "status": {**status, **lost}} if lost else body

    def check(self, key: JobKey, uid: str, written: dict[str, Any], stored: dict[str, Any]) -> None:
        """After a status write: keep the fields in memory that the apiserver dropped."""
        after = stored.get("status") or {}
        pruned = {
            k: copy.deepcopy(written[k])
            for k in KEPT_FIELDS
            if written.get(k) not in (None, {}) and k not in after
        }
        if not pruned:
            self._kept.pop(key, None)
            return
        self._kept[key] = (uid, pruned)
        if "recreations" in pruned and not self._warned:
            self._warned = True
            logger.warning(
                "the installed TFJob CRD prunes status.recreations (Kubeflow's CRD?): "
                "backoffLimit counts pod recreations only while this operator process runs; "
                "apply manifests/crd/tfjobs.kubeflow.org.yaml to keep them in the job's status"
            )

    def forget(self, key: JobKey) -> None:
        """The job is gone."""
        self._kept.pop(key, None)
