"""The TensorBoard the operator runs sits under a NetworkPolicy (issue 39): its pods carry no
job-name label, so the job's own policy never selected them, and its :6006 (no
authentication) was open to every pod of every namespace. Now `<job>-tensorboard` selects
exactly its pods and admits no pod; only the CIDRs an admin lists (an apiserver elsewhere,
whose service proxy `taas tensorboard` uses). In-memory apiserver, the Controller in this
process."""

from __future__ import annotations

from typing import Any

import pytest

from taas_operator.api import parse_tfjob
from taas_operator.tensorboard.objects import desired_tensorboard
from taas_operator.tensorboard.policy import desired_tensorboard_policy
from tests.harness.operator_run import (
    Api,
    StartOperator,
    new_namespace,
    unique,
)
from tests.harness.waiting import wait
from tests.operator.tensorboard_helpers import board_job

pytestmark = [pytest.mark.fast, pytest.mark.timeout(120)]

VOLUME = {"hostPath": {"path": "/srv/runs"}}


def _selects(policy: dict[str, Any], labels: dict[str, str]) -> bool:
    wanted = policy["spec"]["podSelector"]["matchLabels"]
    return all(labels.get(k) == v for k, v in wanted.items())


def test_the_policy_selects_the_tensorboard_pods_and_admits_only_the_cidrs() -> None:
    manifest = board_job("mnist", "true", "/model/run", VOLUME)
    manifest["metadata"].update(namespace="team", uid="u-1")
    job = parse_tfjob(manifest)
    deployment, _ = desired_tensorboard(job, "registry.example/tb:1")
    closed = desired_tensorboard_policy(job, [])
    assert _selects(closed, deployment["spec"]["template"]["metadata"]["labels"])
    assert closed["spec"]["policyTypes"] == ["Ingress"] and closed["spec"]["ingress"] == []
    assert closed["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    opened = desired_tensorboard_policy(job, ["10.0.0.5/32"])
    assert opened["spec"]["ingress"] == [
        {
            "from": [{"ipBlock": {"cidr": "10.0.0.5/32"}}],
            "ports": [{"protocol": "TCP", "port": 6006}],
        }
    ]


def test_the_operator_makes_the_policy_with_the_tensorboard(
    fake_admin: Api, start_fake_operator: StartOperator
) -> None:
    ns = new_namespace(fake_admin, "tbpol")
    name = unique("board")
    fake_admin.create_tfjob(ns, board_job(name, "true", "/model/run", VOLUME))
    start_fake_operator(ns)
    policy_path = f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies/{name}-tensorboard"
    deploy_path = f"/apis/apps/v1/namespaces/{ns}/deployments/{name}-tensorboard"
    policy = wait(lambda: fake_admin.find(policy_path), "the TensorBoard's NetworkPolicy")
    deployment = wait(lambda: fake_admin.find(deploy_path), "the TensorBoard")
    assert _selects(policy, deployment["spec"]["template"]["metadata"]["labels"])
    assert policy["spec"]["ingress"] == []
    uid = fake_admin.tfjob(ns, name)["metadata"]["uid"]  # type: ignore[index]
    assert policy["metadata"]["ownerReferences"][0]["uid"] == uid
