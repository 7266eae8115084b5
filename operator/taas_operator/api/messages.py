"""Validation messages shared by the CRD's CEL rules and the pydantic-side checks.

Each message says what is wrong and how to fix it. `manifests/crd/tfjobs.kubeflow.org.yaml`
carries the same text in its `x-kubernetes-validations` (a test compares them), so
`kubectl apply` and `taas validate` print the same words after the same field path.
"""

from __future__ import annotations

from typing import Final

from taas_operator.api.constants import MAX_REPLICAS

NAME_DNS1035: Final = (
    "must be a DNS-1035 label: at most 63 lowercase letters, digits or '-', starting with a "
    "letter and ending with a letter or digit; fix: rename the TFJob, e.g. 'mnist-dist'"
)
NAME_TOO_LONG_FOR_REPLICAS: Final = (
    "too long for its replicas: each pod and service is named '<name>-<replica type>-<index>', "
    "which must be at most 63 characters; fix: shorten the TFJob's name so that e.g. "
    "'<name>-worker-<last index>' fits in 63 characters"
)
UNKNOWN_REPLICA_TYPE: Final = (
    "unknown replica type; fix: use only PS, Worker, Chief, Master or Evaluator as keys "
    "(letter case is ignored)"
)
DUPLICATE_REPLICA_TYPE: Final = (
    "a replica type is given twice in different letter case; fix: keep one key per replica type"
)
CHIEF_AND_MASTER: Final = (
    "Chief and Master are both set; fix: keep only one of them (a TFJob has one chief)"
)
NO_REPLICA_SPECS: Final = "at least one replica type is required; fix: add e.g. a Worker entry"
NEGATIVE_REPLICAS: Final = "must be 0 or more; fix: set replicas to a number >= 0"
TOO_MANY_REPLICAS: Final = (
    f"must be at most {MAX_REPLICAS}: every pod's TF_CONFIG lists every replica's host; fix: "
    f"set replicas to at most {MAX_REPLICAS}, or split the training into several TFJobs"
)
TOO_MANY_REPLICAS_IN_TOTAL: Final = (
    f"more than {MAX_REPLICAS} replicas in total (the sum of tfReplicaSpecs[*].replicas): every "
    f"pod's TF_CONFIG lists every replica's host; fix: lower the replicas to at most "
    f"{MAX_REPLICAS} together, or split the training into several TFJobs"
)
NO_CONTAINERS: Final = (
    "at least one container is required; fix: add a container named 'tensorflow' with an image"
)
NO_TENSORFLOW_CONTAINER: Final = (
    "no container is named 'tensorflow'; fix: name the container that runs TensorFlow "
    "'tensorflow' (TF_CONFIG and the port tfjob-port are set there)"
)
NO_IMAGE: Final = (
    "container has no image; fix: set image to the container image that runs your training code"
)
MIN_AVAILABLE_ABOVE_REPLICAS: Final = (
    "larger than the job: minAvailable pods are placed together, and the TFJob has fewer "
    "replicas (the sum of tfReplicaSpecs[*].replicas); fix: lower minAvailable to at most "
    "that sum, or remove it (default: every replica)"
)
REQUIRED: Final = "Required value"
#: The apiserver's line (path `<nil>`) when a schema error kept it from running the CEL rules.
RULES_NOT_CHECKED: Final = (
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation"
)


def unsupported_value(value: object, allowed: tuple[str, ...]) -> str:
    """The apiserver's enum message, e.g. `Unsupported value: "X": supported values: "A", "B"`."""
    shown = f'"{value}"' if isinstance(value, str) else str(value)
    return f"Unsupported value: {shown}: supported values: " + ", ".join(f'"{a}"' for a in allowed)
