"""The apiserver's size limits, checked offline on a manifest as kubectl would send it.

    MAX_REQUEST_BYTES      3 MiB: kube-apiserver's limit on a request body (--max-request-bytes
                           of its generic server, `MaxRequestBodyBytes`), so also the largest
                           YAML file worth reading
    MAX_OBJECT_BYTES       1.5 MiB: the largest object the apiserver stores (etcd's default
                           --max-request-bytes; a custom resource is stored as its JSON)
    WARN_OBJECT_BYTES      512 KiB: past this, a TFJob is refused by nothing (TaaS's watches
                           read events of any size the apiserver sends) but costs every watch of
                           TFJobs (operator, dashboard, `kubectl get -w`) that much per change
    MAX_ANNOTATIONS_BYTES  256 KiB: metadata.annotations, keys and values together
                           (`TotalAnnotationSizeLimitB` of apimachinery's ObjectMeta validation)
    size_errors(doc) -> list[str]   each limit a TFJob document breaks, as "field: problem; fix"
    size_warnings(doc) -> list[str] the same for WARN_OBJECT_BYTES (the job is still valid)

The TFJob's own annotations are checked by the apiserver when the TFJob is created; a pod
template's annotations only when the operator creates the pod (the CRD keeps templates open), so
the job would be accepted and then fail: `taas validate` reports both up front.
"""

from __future__ import annotations

import json
from typing import Any

MAX_REQUEST_BYTES = 3 * 1024 * 1024
MAX_OBJECT_BYTES = 1536 * 1024
WARN_OBJECT_BYTES = 512 * 1024
_MOVE_DATA = "move data out of the manifest (a ConfigMap, a volume, the image)"
MAX_ANNOTATIONS_BYTES = 256 * 1024


def _annotations_bytes(meta: Any) -> int:
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict):
        return 0
    return sum(_utf8_bytes(str(k)) + _utf8_bytes(str(v)) for k, v in annotations.items())


def _annotations_error(path: str, meta: Any, fix: str) -> list[str]:
    size = _annotations_bytes(meta)
    if size <= MAX_ANNOTATIONS_BYTES:
        return []
    return [
        f"{path}: Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes (the keys and values "
        f"have {size}); {fix}"
    ]


def size_errors(doc: dict[str, Any]) -> list[str]:
    """The apiserver's size limits `doc` (a TFJob manifest as loaded) breaks, one line each."""
    errors = _annotations_error(
        "metadata.annotations",
        doc.get("metadata"),
        "the apiserver refuses the TFJob: keep large data in a ConfigMap or a volume",
    )
    spec = doc.get("spec")
    replicas = spec.get("tfReplicaSpecs") if isinstance(spec, dict) else None
    for rtype, replica in (replicas or {}).items() if isinstance(replicas, dict) else ():
        template = replica.get("template") if isinstance(replica, dict) else None
        if isinstance(template, dict):
            errors += _annotations_error(
                f"spec.tfReplicaSpecs[{rtype}].template.metadata.annotations",
                template.get("metadata"),
                "the apiserver would refuse every pod of this replica type: keep large data "
                "in a ConfigMap or a volume",
            )
    size = json_bytes(doc)
    if size > MAX_OBJECT_BYTES:
        errors.append(
            f"<the TFJob>: Too long: the object is {size} bytes as JSON, more than the "
            f"{MAX_OBJECT_BYTES} bytes (1.5 MiB) the apiserver stores (etcd's request limit); "
            f"{_MOVE_DATA}"
        )
    return errors


def size_warnings(doc: dict[str, Any]) -> list[str]:
    """What makes `doc` costly though valid: past WARN_OBJECT_BYTES, one line."""
    size = json_bytes(doc)
    if WARN_OBJECT_BYTES < size <= MAX_OBJECT_BYTES:
        return [
            f"<the TFJob>: the object is {size} bytes as JSON, more than {WARN_OBJECT_BYTES} "
            f"(512 KiB): every watch of TFJobs (the operator's, the dashboard's) receives it "
            f"whole on each change; {_MOVE_DATA}"
        ]
    return []


def json_bytes(doc: Any) -> int:
    """The size of `doc` as the apiserver stores it: compact JSON, UTF-8."""
    return _utf8_bytes(json.dumps(doc, separators=(",", ":"), ensure_ascii=False, default=str))


def _utf8_bytes(text: str) -> int:
    """UTF-8 bytes of `text`; an escaped character past U+FFFF ("\\ud800\\udc00", which the
    loader reads as two surrogates) counts 6 bytes, not the 4 it takes joined."""
    return len(text.encode("utf-8", "surrogatepass"))
