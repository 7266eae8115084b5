"""The kubeflow.org/v1 TFJob API: models, constants, validation.

Public surface:
    parse_tfjob(obj) -> TFJob            validate a manifest dict (raises TFJobValidationError)
    template_errors(replica_type, template) -> list[FieldError]   a pod template's schema errors
    TFJob, TFJobSpec, ReplicaSpec, RunPolicy, TFJobStatus, JobCondition, ReplicaStatus, Recreation,
    TFJobProgress, ScalarPoint
    ProgressReport                       what a chief publishes (taas_operator.api.progress_report)
    TFJobValidationError (.errors: list[FieldError(path, message)])
    constants (label keys, reasons, defaults) in `taas_operator.api.constants`
    messages (shared with the CRD's CEL rules) in `taas_operator.api.messages`
    the CRD's schema (generated, package data) in `taas_operator.api.schema`
"""

from taas_operator.api.models import (
    JobCondition,
    ObjectMeta,
    Recreation,
    ReplicaSpec,
    ReplicaStatus,
    RunPolicy,
    ScalarPoint,
    SchedulingPolicy,
    TFJob,
    TFJobProgress,
    TFJobSpec,
    TFJobStatus,
    format_time,
)
from taas_operator.api.progress_report import ProgressReport
from taas_operator.api.validation import (
    FieldError,
    TFJobValidationError,
    normalize_replica_type,
    parse_tfjob,
    template_errors,
)

__all__ = [
    "FieldError",
    "JobCondition",
    "ObjectMeta",
    "ProgressReport",
    "Recreation",
    "ReplicaSpec",
    "ReplicaStatus",
    "RunPolicy",
    "ScalarPoint",
    "SchedulingPolicy",
    "TFJob",
    "TFJobProgress",
    "TFJobSpec",
    "TFJobStatus",
    "TFJobValidationError",
    "format_time",
    "normalize_replica_type",
    "parse_tfjob",
    "template_errors",
]
