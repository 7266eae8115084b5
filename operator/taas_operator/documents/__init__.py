"""Documents users give TaaS: YAML files, stdin, the dashboard's submit form; read with bounds.

    load_tfjobs(path, namespace=None) -> list[TFJob]            (tfjobs.py)
    parse_tfjobs(text, source, namespace=None) -> list[TFJob]   (tfjobs.py)
    load_documents(text, source) -> list[Any], read_text(path)  (loader.py: the one YAML loader
                                                                 for untrusted text, bounded)
    InputError                                                  (errors.py)
    MAX_REQUEST_BYTES, MAX_OBJECT_BYTES, MAX_ANNOTATIONS_BYTES, size_errors(doc),
    WARN_OBJECT_BYTES, size_warnings(doc)                       (limits.py: the apiserver's)

Every YAML a user gives TaaS goes through `load_documents`; nothing else here parses YAML.
"""

from taas_operator.documents.errors import InputError
from taas_operator.documents.limits import (
    MAX_ANNOTATIONS_BYTES,
    MAX_OBJECT_BYTES,
    MAX_REQUEST_BYTES,
    WARN_OBJECT_BYTES,
    size_errors,
    size_warnings,
)
from taas_operator.documents.loader import LIMITS, YamlLimits, load_documents, read_text
from taas_operator.documents.tfjobs import load_tfjobs, parse_tfjobs

__all__ = [
    "LIMITS",
    "MAX_ANNOTATIONS_BYTES",
    "MAX_OBJECT_BYTES",
    "MAX_REQUEST_BYTES",
    "WARN_OBJECT_BYTES",
    "InputError",
    "YamlLimits",
    "load_documents",
    "load_tfjobs",
    "parse_tfjobs",
    "read_text",
    "size_errors",
    "size_warnings",
]
