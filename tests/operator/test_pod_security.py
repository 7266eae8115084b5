"""A pod refused by Pod Security Admission (built into kube-apiserver) is reported as such: the
TFJob's Warning event and the operator's log name Pod Security Admission, the level the
namespace enforces and the fix, never RBAC advice (the operator's Role is not the problem).

Real apiserver with its PodSecurity admission plugin; the namespace is labelled
`pod-security.kubernetes.io/enforce=restricted`; the TFJob's pod template sets no
securityContext, as most do.

Issue 29, point 6 (docs/security.md, "What a TFJob may ask for"): creating a TFJob amounts to
creating any pod in its namespace, so Pod Security Admission on the tenant's namespace is the
guard. With `enforce=baseline`, a TFJob asking for the host's PID namespace, network and root
filesystem gets no pod, and says why; an ordinary TFJob in the same namespace runs.
"""

from __future__ import annotations

import pytest

from tests.harness.operator_run import (
    Api,
    StartOperator,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

ENFORCE = "pod-security.kubernetes.io/enforce"

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]


def _refusal(admin: Api, ns: str, name: str) -> str | None:
    for event in admin.events(ns, name):
        if event["reason"] == "FailedCreatePod" and event["type"] == "Warning":
            return str(event["message"])
    return None


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
    message = wait(lambda: _refusal(admin, ns, name), "the FailedCreatePod event")
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


def test_baseline_refuses_a_tfjob_asking_for_the_host(
    admin: Api, start_operator: StartOperator
) -> None:
    """The example of docs/security.md: hostPID, hostNetwork and a hostPath of `/` in a
    TFJob's template, in a namespace labelled enforce=baseline."""
    ns = new_namespace(admin, "psab")
    admin.merge_patch(f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {ENFORCE: "baseline"}}})
    start_operator(ns)
    name = unique("host")
    container = {
        "name": "tensorflow",
        "image": "example.com/trainer:1",
        "volumeMounts": [{"name": "host", "mountPath": "/host"}],
    }
    manifest = tfjob(name, {"Worker": {"containers": [container]}})
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"].update(
        hostPID=True, hostNetwork=True, volumes=[{"name": "host", "hostPath": {"path": "/"}}]
    )
    admin.create_tfjob(ns, manifest)
    message = wait(lambda: _refusal(admin, ns, name), "the FailedCreatePod event")
    assert f"Error creating pod {name}-worker-0: Pod Security Admission refused the pod" in message
    assert f'namespace {ns} enforces the "baseline:latest" Pod Security level' in message
    # the apiserver's own words, naming each thing refused
    assert "host namespaces (hostNetwork=true, hostPID=true)" in message
    assert 'hostPath volumes (volume "host")' in message
    assert admin.pods(ns, name) == {}

    plain = unique("plain")  # an ordinary TFJob in the same namespace runs
    admin.create_tfjob(ns, tfjob(plain, {"Worker": {"replicas": 2}}))
    wait(lambda: len(admin.pods(ns, plain)) == 2, "the ordinary job's 2 pods")
    assert _refusal(admin, ns, plain) is None
