"""A pod template the apiserver refuses (its validation, which the in-memory apiserver of
test_lifecycle does not have): the job fails once, naming replica and field.
"""

from __future__ import annotations

import time

import pytest

from tests.harness.operator_run import (
    Api,
    StartOperator,
    condition,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(120)]


def test_pod_template_the_apiserver_refuses_fails_the_job_once(
    admin: Api, start_operator: StartOperator
) -> None:
    """The CRD keeps pod templates open (their types, not every rule of pod validation), so a
    cpu request above its limit reaches the operator; the apiserver refuses the pod (422) and
    the job ends Failed naming replica and field, instead of retrying forever."""
    ns = new_namespace(admin, "badpod")
    start_operator(ns)
    name = unique("badpod")
    container = {
        "name": "tensorflow",
        "image": "example.com/trainer:1",
        "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
    }
    admin.create_tfjob(ns, tfjob(name, {"Worker": {"containers": [container]}}))
    job = wait(lambda: (j := admin.tfjob(ns, name)) and condition(j, "Failed") and j, "Failed")
    message = condition(job, "Failed")["message"]
    assert message.startswith(f"TFJob {ns}/{name} has an invalid spec: ")
    assert f"pod {name}-worker-0" in message and "resources.requests" in message
    assert "fix spec.tfReplicaSpecs.Worker.template" in message
    assert admin.pods(ns, name) == {}
    wait(lambda: "InvalidTFJobSpec" in reasons(admin, ns, name), "InvalidTFJobSpec event")
    time.sleep(2)  # later passes must not post it again
    assert reasons(admin, ns, name).count("InvalidTFJobSpec") == 1


def reasons(admin: Api, ns: str, name: str) -> list[str]:
    return [e["reason"] for e in admin.events(ns, name)]
