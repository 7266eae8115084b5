"""`engine.plan_job` on arbitrary pod templates (hypothesis): whatever a template holds (a job
stored before the CRD carried the pod template's schema can hold anything), the engine returns
a plan and never raises. A template the pod builder cannot read fails the job once: condition
Failed, reason InvalidTFJobSpec, one Warning event naming the replica and the field, no pods;
a readable one gets its pods and services built.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taas_operator.api import template_errors
from taas_operator.api.constants import COND_FAILED, REASON_INVALID_SPEC
from taas_operator.planner import plan_job
from tests.harness.api_agreement import nodes

from .helpers import job

NOW = datetime(2025, 1, 1, tzinfo=UTC)
_KEYS = st.sampled_from(["name", "value", "containerPort", "protocol", "key", "a", "spec", "x"])
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)


def _valid(fields: dict[str, st.SearchStrategy[Any]], **required: st.SearchStrategy[Any]):
    """A valid object: the `required` fields and some of the others."""
    return st.fixed_dictionaries(required, optional=fields)


PORT = _valid(
    {"name": st.sampled_from(["tfjob-port", "metrics"]), "protocol": st.sampled_from(["TCP"])},
    containerPort=st.integers(1, 65535),
)
ENV = _valid({"value": st.text(max_size=4)}, name=st.sampled_from(["A", "TF_CONFIG", "B"]))
CONTAINER = _valid(
    {
        "image": st.just("example/train:1"),
        "ports": st.lists(PORT, max_size=3, unique_by=lambda p: p["containerPort"]),
        "env": st.lists(ENV, max_size=3, unique_by=lambda e: e["name"]),
        "args": st.lists(st.text(max_size=4), max_size=2),
        "command": st.lists(st.text(max_size=4), max_size=2),
        "workingDir": st.text(max_size=4),
        "resources": st.just({"limits": {"cpu": "1", "memory": "1Gi"}}),
    },
    name=st.sampled_from(["tensorflow", "sidecar"]),
)
LABELS = st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2)
VALID_TEMPLATE = _valid(
    {"metadata": _valid({"labels": LABELS, "annotations": LABELS})},
    spec=_valid(
        {
            "restartPolicy": st.just("Always"),
            "terminationGracePeriodSeconds": st.integers(0, 60),
            "nodeSelector": LABELS,
        },
        containers=st.lists(CONTAINER, max_size=3, unique_by=lambda c: c["name"]),
    ),
)


@st.composite
def templates(draw: st.DrawFn) -> dict[str, Any]:
    """A valid template with up to three fields (anywhere, the template's own included)
    replaced by, or extended with, arbitrary JSON values: a quarter of them stay untouched."""
    template = copy.deepcopy(draw(VALID_TEMPLATE))  # drawn values may be shared: edit a copy
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from([(), *nodes(template)]))
        parent = template
        for key in path[:-1]:
            parent = parent[key]
        target = parent[path[-1]] if path else template
        if isinstance(target, dict) and draw(st.booleans()):
            target[draw(_KEYS)] = copy.deepcopy(draw(JSON))  # a new field or a known one
        elif path:
            parent[path[-1]] = copy.deepcopy(draw(JSON))
    return template


TEMPLATE = templates()


def _check(template: dict[str, Any], replicas: int) -> None:
    tfjob = job({"PS": 1, "Worker": replicas})
    tfjob.spec.tf_replica_specs["Worker"].template = template
    plan = plan_job(tfjob, [], NOW, services=set())
    problems = template_errors("Worker", template)
    failed = plan.status.condition(COND_FAILED)
    if problems:
        assert failed is not None and failed.status == "True"
        assert failed.reason == REASON_INVALID_SPEC
        assert "spec.tfReplicaSpecs.Worker.template" in failed.message
        assert str(problems[0]) in failed.message
        warnings = [e for e in plan.events if e.type == "Warning"]
        assert [e.reason for e in warnings] == [REASON_INVALID_SPEC]
        assert not plan.create_pods and not plan.create_services
        # once: the next pass, from the status just written, says nothing more
        tfjob.status = plan.status
        again = plan_job(tfjob, [], NOW, services=set())
        assert not again.events and not again.status_changed and not again.create_pods
    else:
        assert failed is None
        assert len(plan.create_pods) == 1 + replicas
        assert len(plan.create_services) == 1 + replicas
        json.dumps([plan.create_pods, plan.create_services])  # plain JSON, ready to send


@pytest.mark.parametrize(
    "examples",
    [pytest.param(200, id="200"), pytest.param(2000, id="2000", marks=pytest.mark.slow)],
)
def test_plan_job_returns_a_plan_for_any_template(examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(template=TEMPLATE, replicas=st.integers(1, 3))
    def check(template: dict[str, Any], replicas: int) -> None:
        _check(template, replicas)

    check()


T = "spec.tfReplicaSpecs.Worker.template"


@pytest.mark.parametrize(
    ("template", "named"),
    [
        (
            {"spec": {"containers": [{"name": "tensorflow", "env": {"A": "1"}}]}},
            f'{T}.spec.containers[0].env: Invalid value: "object"',
        ),
        (
            {"spec": {"containers": [{"name": "tensorflow", "ports": {"p": 1}}]}},
            f'{T}.spec.containers[0].ports: Invalid value: "object"',
        ),
        (
            {"metadata": {"labels": ["a"]}, "spec": {"containers": []}},
            f'{T}.metadata.labels: Invalid value: "array"',
        ),
        ({"metadata": "x", "spec": {"containers": []}}, f'{T}.metadata: Invalid value: "string"'),
        ({"spec": {"containers": [{"name": "tensorflow", "ports": None}]}}, None),
    ],
    ids=["env-map", "ports-map", "labels-list", "metadata-string", "ports-null"],
)
def test_known_bad_templates(template: dict[str, Any], named: str | None) -> None:
    """The issue's cases: the replica and field named in the failure; a null is no failure."""
    tfjob = job({"Worker": 1})
    tfjob.spec.tf_replica_specs["Worker"].template = template
    plan = plan_job(tfjob, [], NOW, services=set())
    failed = plan.status.condition(COND_FAILED)
    if named is None:
        assert failed is None and len(plan.create_pods) == 1
        return
    assert failed is not None and failed.reason == REASON_INVALID_SPEC
    assert failed.message.startswith(f"TFJob ns1/mnist has an invalid spec: {named}")
