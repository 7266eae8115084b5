"""A pod refused by Pod Security Admission (built into kube-apiserver) is reported as such: the
TFJob's Warning event and the operator's log name Pod Security Admission, the level the
namespace enforces and the fix, never RBAC advice (the operator's Role is not the problem).

Real apiserver with its PodSecurity admission plugin; the namespace is labelled
`pod-security.kubernetes.io/enforce=restricted`; the TFJob's pod template sets no
securityContext, as most do.
"""

from __future__ import annotations

import pytest
from operator_harness import Api, StartOperator, new_namespace, tfjob, unique, wait_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]


def test_a_pod_security_refusal_names_psa_and_the_level(
    admin: Api, start_operator: StartOperator
) -> None:
    ns = new_namespace(admin, "psa")
    admin.merge_patch(
        f"/api/v1/namespaces/{ns}",
        {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}},
    )
    operator = start_operator(ns)
    name = unique("plain")
    admin.create_tfjob(ns, tfjob(name, {"Worker": {"replicas": 1}}))

    def refusal() -> str | None:
        for event in admin.events(ns, name):
            if event["reason"] == "FailedCreatePod" and event["type"] == "Warning":
                return str(event["message"])
        return None

    message = wait_for(refusal, "the FailedCreatePod event")
    assert f"Error creating pod {name}-worker-0: Pod Security Admission refused the pod" in message
    assert f'namespace {ns} enforces the "restricted:latest" Pod Security level' in message
    assert "label pod-security.kubernetes.io/enforce" in message
    assert "allowPrivilegeEscalation != false" in message  # the apiserver's own list
    assert "Fix: make spec.tfReplicaSpecs.Worker.template meet that level" in message
    assert f"relabel namespace {ns} pod-security.kubernetes.io/enforce=<level>" in message
    assert "grant the verb" not in message and "Role" not in message
    assert admin.pods(ns, name) == {}
    log = operator.log()
    assert "Pod Security Admission refused the pod" in log
    assert "grant the verb" not in log
