"""Read TFJob YAML files the way `kubectl apply -f` does, and render what the operator creates.

    load_tfjobs(path: str, namespace: str | None = None) -> list[TFJob]   # raises InputError
    parse_tfjobs(text, source, namespace=None) -> list[TFJob]             # the same, from text
    render_objects(jobs, cluster_domain="", network_policy=True) -> str   # multi-doc YAML

`path` is a file or `-` (stdin) holding one or more YAML documents. Each TFJob document is
validated by `taas_operator.api.parse_tfjob` (the operator's own rules and messages); empty
documents are skipped and documents of other kinds are skipped with a note on stderr (TaaS runs
TFJobs only). Every problem becomes one `InputError` whose text says what and how to fix it;
the CLI prints it and exits with code 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from taas_operator.api import TFJob, TFJobValidationError, parse_tfjob
from taas_operator.api.constants import API_VERSION, KIND
from taas_operator.engine import (
    BuildOptions,
    desired_network_policy,
    desired_pods,
    desired_services,
)


class InputError(Exception):
    """A file, YAML document, TFJob spec or argument that cannot be used; the text says why."""


def read_text(path: str) -> tuple[str, str]:
    """(text, display name) of a file, or of stdin for `-`."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    file = Path(path)
    if not file.exists():
        raise InputError(f'the path "{path}" does not exist')
    if file.is_dir():
        raise InputError(f'the path "{path}" is a directory; give a YAML file')
    try:
        return file.read_text(encoding="utf-8"), path
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f'cannot read "{path}": {exc}') from None


class _KubectlLoader(yaml.SafeLoader):
    """YAML as kubectl reads it: an unquoted date or time stays a string (JSON and Kubernetes
    have no date type), e.g. an annotation `built: 2024-01-01`."""


_KubectlLoader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_documents(text: str, source: str) -> list[Any]:
    """Every non-empty YAML document of `text`."""
    try:
        docs = list(yaml.load_all(text, Loader=_KubectlLoader))  # a SafeLoader: no objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(
            f"{source}: invalid YAML{where}: {problem}; fix the YAML syntax (indentation, "
            f"quotes, ':' after keys)"
        ) from None
    return [d for d in docs if d is not None]


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
        try:
            job = parse_tfjob(doc)
        except TFJobValidationError as exc:
            name = (
                (doc.get("metadata") or {}).get("name")
                if isinstance(doc.get("metadata"), dict)
                else None
            )
            lines = "\n".join(f"* {e}" for e in exc.errors)
            raise InputError(f'{source}: The TFJob "{name or ""}" is invalid:\n{lines}') from None
        key = (job.namespace, job.name)
        if key in names:
            raise InputError(
                f'{source}: TFJob "{job.name}" appears twice in namespace {job.namespace}; '
                f"fix: give each TFJob its own metadata.name"
            )
        names.add(key)
        jobs.append(job)
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


def render_objects(
    jobs: Sequence[TFJob], cluster_domain: str = "", network_policy: bool = True
) -> str:
    """Pods, services and (optionally) NetworkPolicies of `jobs`, as multi-document YAML."""
    objects: list[dict[str, Any]] = []
    options = BuildOptions(cluster_domain=cluster_domain)
    for job in jobs:
        objects += desired_pods(job, options)
        objects += desired_services(job)
        if network_policy:
            objects.append(desired_network_policy(job))
    return yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False)
