"""TFJobs from YAML the way `kubectl apply -f` reads them.

    load_tfjobs(path, namespace=None) -> list[TFJob]           # a file or `-` (stdin)
    parse_tfjobs(text, source, namespace=None) -> list[TFJob]  # the same, from text

The text is read by the bounded loader (`documents.loader`). Each TFJob document is checked
against the apiserver's size limits (`documents.limits`; past the warning size, a note on
stderr) and validated by
`taas_operator.api.parse_tfjob` (the operator's own rules and messages); empty documents are
skipped and documents of other kinds are skipped with a note on stderr (TaaS runs TFJobs only).
Every problem becomes one `InputError` whose text says what and how to fix it.
"""

from __future__ import annotations

import sys
from typing import Any

from taas_operator.api import TFJob, TFJobValidationError, parse_tfjob
from taas_operator.api.constants import API_VERSION, KIND
from taas_operator.documents.errors import InputError
from taas_operator.documents.limits import size_errors, size_warnings
from taas_operator.documents.loader import load_documents, read_text


def _describe(doc: Any, number: int) -> str:
    if isinstance(doc, dict):
        kind = doc.get("kind") or "<no kind>"
        name = (
            (doc.get("metadata") or {}).get("name")
            if isinstance(doc.get("metadata"), dict)
            else None
        )
        return f"{kind}/{name}" if name else str(kind)
    return f"document {number} ({type(doc).__name__})"


def _is_tfjob(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == KIND


def _name(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata")
    return str((meta.get("name") if isinstance(meta, dict) else None) or "")


def _set_namespace(doc: dict[str, Any], namespace: str | None, source: str) -> None:
    meta = doc.setdefault("metadata", {}) if isinstance(doc.get("metadata", {}), dict) else None
    if meta is None or namespace is None:
        return
    own = meta.get("namespace")
    if own and own != namespace:
        raise InputError(
            f'{source}: the namespace from the provided object "{own}" does not match the '
            f"namespace \"{namespace}\". You must pass '--namespace={own}' to perform this "
            f"operation."
        )
    meta["namespace"] = namespace


def load_tfjobs(path: str, namespace: str | None = None) -> list[TFJob]:
    """Validated TFJobs of a file (or stdin); InputError on any problem."""
    text, source = read_text(path)
    return parse_tfjobs(text, source, namespace)


def parse_tfjobs(text: str, source: str, namespace: str | None = None) -> list[TFJob]:
    """Validated TFJobs of YAML text (`source` names it in messages); InputError on any
    problem. `taas validate` and the dashboard's submit form both check with this."""
    docs = load_documents(text, source)
    jobs: list[TFJob] = []
    names: set[tuple[str, str]] = set()
    skipped: list[str] = []
    for number, doc in enumerate(docs, start=1):
        if not _is_tfjob(doc):
            if isinstance(doc, dict) and doc.get("kind") is None:
                raise InputError(
                    f"{source}: document {number}: kind not set; fix: add "
                    f"'apiVersion: {API_VERSION}' and 'kind: {KIND}'"
                )
            skipped.append(_describe(doc, number))
            continue
        _set_namespace(doc, namespace, source)
        too_big = size_errors(doc)
        if too_big:
            lines = "\n".join(f"* {e}" for e in too_big)
            raise InputError(f'{source}: The TFJob "{_name(doc)}" is invalid:\n{lines}')
        try:
            job = parse_tfjob(doc)
        except TFJobValidationError as exc:
            lines = "\n".join(f"* {e}" for e in exc.errors)
            raise InputError(f'{source}: The TFJob "{_name(doc)}" is invalid:\n{lines}') from None
        key = (job.namespace, job.name)
        if key in names:
            raise InputError(
                f'{source}: TFJob "{job.name}" appears twice in namespace {job.namespace}; '
                f"fix: give each TFJob its own metadata.name"
            )
        names.add(key)
        jobs.append(job)
        for warning in size_warnings(doc):
            print(f'warning: {source}: TFJob "{job.name}": {warning}', file=sys.stderr)
    if not jobs:
        found = f" (found {', '.join(skipped)})" if skipped else ""
        raise InputError(
            f"{source}: no TFJob found{found}; expected a document with "
            f"apiVersion: {API_VERSION} and kind: {KIND}"
        )
    for what in skipped:
        print(
            f"note: {source}: skipping {what}: taas runs TFJobs ({API_VERSION}) only",
            file=sys.stderr,
        )
    return jobs
