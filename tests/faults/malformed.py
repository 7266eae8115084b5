"""Hypothesis strategies for TFJobs that are wrong in at least one way.

    malformed_tfjobs(name: str) -> SearchStrategy[tuple[str, dict]]   # (what is wrong, manifest)

Each example starts from a valid two-replica TFJob and applies one or two mutations drawn from
MUTATIONS: broken metadata, spec shape, replica types and counts, enums, containers, and pod
content that only the pod validation (at pod creation) refuses. A correct system refuses each at
`kubectl apply` or marks the job Failed with a message.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

Manifest = dict[str, Any]
Mutation = Callable[[Manifest], None]
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_TYPES = {"ps", "worker", "chief", "master", "evaluator"}
# no None: the apiserver prunes nulls, and a pruned field takes its (valid) default; no whole
# floats: 1.0 is a valid integer in JSON
_JUNK = st.one_of(
    st.text(max_size=8),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)


def valid_tfjob(name: str) -> Manifest:
    container = {"name": "tensorflow", "image": "registry.invalid/taas/noop:1"}
    replica = {
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {"spec": {"containers": [container]}},
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": {"PS": copy.deepcopy(replica), "Worker": replica}},
    }


def _worker(m: Manifest) -> dict[str, Any]:
    return m["spec"]["tfReplicaSpecs"]["Worker"]


def _tf(m: Manifest) -> dict[str, Any]:
    return _worker(m)["template"]["spec"]["containers"][0]


def _set(path: Callable[[Manifest], dict[str, Any]], key: str, value: Any) -> Mutation:
    def mutate(m: Manifest) -> None:
        path(m)[key] = value

    return mutate


def _drop(path: Callable[[Manifest], dict[str, Any]], key: str) -> Mutation:
    def mutate(m: Manifest) -> None:
        path(m).pop(key, None)

    return mutate


def _name_mutations() -> st.SearchStrategy[tuple[str, Mutation]]:
    bad = st.one_of(
        st.text(min_size=1, max_size=20).filter(lambda s: not _DNS1035.match(s)),
        st.from_regex(r"\A[a-z][a-z0-9]{63,70}\Z"),
        st.from_regex(r"\A[0-9][a-z0-9-]{0,8}\Z"),
    )
    return bad.map(lambda v: (f"name {v!r}", _set(lambda m: m["metadata"], "name", v)))


def _replica_type_mutations() -> st.SearchStrategy[tuple[str, Mutation]]:
    def add_type(key: str) -> Mutation:
        def mutate(m: Manifest) -> None:
            m["spec"]["tfReplicaSpecs"][key] = copy.deepcopy(_worker(m))

        return mutate

    unknown = st.text(min_size=1, max_size=12).filter(lambda s: s.lower() not in _TYPES)
    return st.one_of(
        unknown.map(lambda k: (f"unknown replica type {k!r}", add_type(k))),
        st.just(("Chief and Master both", lambda m: [add_type("Chief")(m), add_type("Master")(m)])),
    )


def _static_mutations() -> list[tuple[str, Mutation]]:
    spec = lambda m: m["spec"]  # noqa: E731
    pod = lambda m: _worker(m)["template"]["spec"]  # noqa: E731
    return [
        ("no spec", _drop(lambda m: m, "spec")),
        ("no tfReplicaSpecs", _drop(spec, "tfReplicaSpecs")),
        ("empty tfReplicaSpecs", _set(spec, "tfReplicaSpecs", {})),
        ("no template", _drop(_worker, "template")),
        ("template without spec", _set(_worker, "template", {"metadata": {}})),
        ("no containers", _drop(pod, "containers")),
        ("empty containers", _set(pod, "containers", [])),
        ("no image", _drop(_tf, "image")),
        ("empty image", _set(_tf, "image", "")),
        ("no container named tensorflow", _set(_tf, "name", "trainer")),
        # the pod template's schema (generated from the Kubernetes types) refuses these
        ("cpu limit 'lots'", _set(_tf, "resources", {"limits": {"cpu": "lots"}})),
        ("env as a map", _set(_tf, "env", {"A": "1"})),
        ("env as strings", _set(_tf, "env", ["A=1"])),
        ("ports as a map", _set(_tf, "ports", {"tfjob-port": 2222})),
        ("containerPort 'abc'", _set(_tf, "ports", [{"containerPort": "abc"}])),
        # bounded in the CRD since issue 39 (as Kubernetes bounds a pod's ports)
        ("containerPort 70000", _set(_tf, "ports", [{"name": "extra", "containerPort": 70000}])),
        ("args as a string", _set(_tf, "args", "--max_steps=10")),
        ("workingDir 5", _set(_tf, "workingDir", 5)),
        (
            "template labels as a list",
            lambda m: _worker(m)["template"].update(metadata={"labels": ["a"]}),
        ),
    ]


def pod_level_mutations() -> list[tuple[str, Mutation]]:
    """Accepted by the CRD schema (it checks the pod template's types, not every rule of pod
    validation), refused when the operator creates the pod: the operator must fail the job with
    the reason."""
    pod = lambda m: _worker(m)["template"]["spec"]  # noqa: E731
    return [
        ("env var name with '='", _set(_tf, "env", [{"name": "A=B", "value": "x"}])),
        (
            "cpu request above its limit",
            _set(_tf, "resources", {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        ),
        (
            "mount of a volume that does not exist",
            _set(_tf, "volumeMounts", [{"name": "nothere", "mountPath": "/data"}]),
        ),
        (
            "second container named Bad_Name",
            lambda m: pod(m)["containers"].append({"name": "Bad_Name", "image": "x"}),
        ),
    ]


def _value_mutations() -> st.SearchStrategy[tuple[str, Mutation]]:
    spec = lambda m: m["spec"]  # noqa: E731
    run_policy = lambda m: m["spec"].setdefault("runPolicy", {})  # noqa: E731
    not_enum = lambda allowed: _JUNK.filter(lambda v: not any(v == a for a in allowed))  # noqa: E731
    return st.one_of(
        st.integers(max_value=-1).map(lambda v: (f"replicas {v}", _set(_worker, "replicas", v))),
        _JUNK.filter(lambda v: not isinstance(v, int) or isinstance(v, bool)).map(
            lambda v: (f"replicas {v!r}", _set(_worker, "replicas", v))
        ),
        not_enum({"Always", "OnFailure", "Never", "ExitCode"}).map(
            lambda v: (f"restartPolicy {v!r}", _set(_worker, "restartPolicy", v))
        ),
        not_enum({"All", "Running", "None"}).map(
            lambda v: (f"cleanPodPolicy {v!r}", _set(run_policy, "cleanPodPolicy", v))
        ),
        st.integers(max_value=-1).map(
            lambda v: (f"backoffLimit {v}", _set(run_policy, "backoffLimit", v))
        ),
        st.integers(max_value=-1).map(
            lambda v: (f"activeDeadlineSeconds {v}", _set(run_policy, "activeDeadlineSeconds", v))
        ),
        not_enum({"", "AllWorkers", None}).map(
            lambda v: (f"successPolicy {v!r}", _set(spec, "successPolicy", v))
        ),
        _JUNK.filter(lambda v: not isinstance(v, dict)).map(
            lambda v: (f"tfReplicaSpecs {v!r}", _set(spec, "tfReplicaSpecs", v))
        ),
    )


MUTATIONS = st.one_of(
    st.sampled_from(_static_mutations()),
    st.sampled_from(pod_level_mutations()),
    _name_mutations(),
    _replica_type_mutations(),
    _value_mutations(),
)


@st.composite
def malformed_tfjobs(draw: st.DrawFn, name: str) -> tuple[str, Manifest]:
    """A TFJob named `name` (unless the name is what is broken) with 1-2 things wrong."""
    manifest = valid_tfjob(name)
    what = []
    for label, mutate in draw(st.lists(MUTATIONS, min_size=1, max_size=2)):
        try:
            mutate(manifest)
        except (KeyError, TypeError, AttributeError, IndexError):
            continue  # an earlier mutation removed what this one edits: one fault is enough
        what.append(label)
    return "; ".join(what), manifest
