"""TFJobs in and out of the client: what `create` sends, how a stored job is read.

    job_manifest(job, namespace, default_namespace) -> dict   # a path, dict or model -> manifest
    read_job(obj) -> TFJob                                     # a stored job, as a model

`job_manifest` checks a YAML path or a dict with the rules `kubectl apply` and `taas validate`
apply (`taas_operator.api.parse_tfjob`, `documents.load_tfjobs`: the same messages), so a
bad spec is refused before anything is sent (`Invalid`). `read_job` reads what the cluster
stores; a job stored under an older CRD is read the operator's way (replica keys normalised).
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError

from taas_operator.api import TFJob, TFJobValidationError, parse_tfjob
from taas_operator.apiserver.errors import Invalid
from taas_operator.client.errors import ClientError
from taas_operator.documents import InputError, load_tfjobs

JobSource = str | os.PathLike[str] | dict[str, Any] | TFJob


def read_job(obj: dict[str, Any]) -> TFJob:
    """A TFJob as the cluster stores it (ClientError naming the job when it cannot be read)."""
    try:
        return TFJob.model_validate(obj)
    except ValidationError:
        pass
    try:  # stored under an older CRD: the operator's own reading (replica keys normalised)
        return parse_tfjob(obj)
    except TFJobValidationError as err:
        meta = obj.get("metadata") or {}
        raise ClientError(
            f"TFJob {meta.get('namespace')}/{meta.get('name')} cannot be read: {err.errors[0]}"
        ) from None


def _model(job: JobSource, namespace: str | None) -> TFJob:
    if isinstance(job, TFJob):
        return job
    if isinstance(job, dict):
        try:
            return parse_tfjob(job)
        except TFJobValidationError as err:
            raise Invalid(str(err)) from None
    try:
        models = load_tfjobs(str(job), namespace)
    except InputError as err:
        raise Invalid(str(err)) from None
    if len(models) != 1:
        raise Invalid(
            f"{job}: holds {len(models)} TFJobs; fix: one TFJob per file for create (or call "
            f"create once per document)"
        )
    return models[0]


def job_manifest(job: JobSource, namespace: str | None, default_namespace: str) -> dict[str, Any]:
    """The manifest to create: checked, without status or server-set metadata, in `namespace`
    (else its own, else `default_namespace`)."""
    manifest = _model(job, namespace).to_dict()
    manifest.pop("status", None)
    meta = manifest.setdefault("metadata", {})
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation"):
        meta.pop(key, None)
    own = meta.get("namespace")
    if namespace and own and own != namespace:
        raise Invalid(
            f'the TFJob names namespace "{own}" but namespace "{namespace}" was asked for; '
            f"fix: drop one of them"
        )
    meta["namespace"] = namespace or own or default_namespace
    return manifest
