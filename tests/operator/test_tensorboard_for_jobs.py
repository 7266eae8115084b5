"""The operator's TensorBoard for a TFJob annotated `taas.dev/tensorboard: "true"`, on the
in-memory apiserver (the fast tier): a Deployment and a Service `<job>-tensorboard` owned by the
job, reading the chief's model_dir volume read-only, invisible to the job's own pod and service
logic; a job whose model_dir no other pod can read gets one Warning naming the fix and runs on;
a job that does not ask gets nothing. `taas tensorboard` and its proxy, on the real apiserver:
test_tensorboard_objects.
"""

from __future__ import annotations

import pytest

from tests.harness.operator_run import (
    Api,
    StartOperator,
    new_namespace,
    unique,
)
from tests.harness.waiting import wait
from tests.operator.fake_operator import module_fixtures
from tests.operator.tensorboard_helpers import DEPLOYMENTS, IMAGE, board_job, warnings_of

pytestmark = [pytest.mark.fast, pytest.mark.timeout(180)]


admin, start_operator = module_fixtures()


@pytest.fixture(scope="module")
def ns(admin: Api, start_operator: StartOperator) -> str:
    name = new_namespace(admin, "tb")
    start_operator(name, args=(f"--tensorboard-image={IMAGE}",))
    return name


def test_an_annotated_job_gets_a_tensorboard_on_its_model_dir(admin: Api, ns: str) -> None:
    name = unique("tb")
    volume = {"persistentVolumeClaim": {"claimName": "runs"}}
    job = admin.create_tfjob(ns, board_job(name, "true", "/model/run", volume))
    board = f"{name}-tensorboard"
    deployment = wait(
        lambda: admin.find(f"{DEPLOYMENTS.format(ns=ns)}/{board}"), "the TensorBoard Deployment"
    )
    service = admin.get(f"/api/v1/namespaces/{ns}/services/{board}")
    for obj in (deployment, service):
        (owner,) = obj["metadata"]["ownerReferences"]
        assert owner["uid"] == job["metadata"]["uid"] and owner["controller"] is True
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == IMAGE
    assert "--logdir=/model/run" in container["args"]
    assert container["volumeMounts"] == [{"name": "model", "mountPath": "/model", "readOnly": True}]
    assert pod["volumes"] == [{"name": "model", **volume}]
    assert service["spec"]["ports"][0]["port"] == 6006
    # The job's own children are what they always were: 3 pods, 3 services, none of them ours.
    wait(lambda: len(admin.pods(ns, name)) == 3, "the job's 3 pods")
    assert sorted(admin.services(ns, name)) == sorted(admin.pods(ns, name))
    created = wait(
        lambda: [m for m in warnings_of(admin, ns, name, "TensorBoardCreated")], "the event"
    )
    assert f"taas tensorboard {name} -n {ns}" in created[0]


def test_a_model_dir_no_pod_can_share_is_one_warning(admin: Api, ns: str) -> None:
    name = unique("tbx")
    admin.create_tfjob(ns, board_job(name, "true", "/model/run", {"emptyDir": {}}))
    wait(lambda: len(admin.pods(ns, name)) == 3, "the job's 3 pods: it runs on")
    warned = wait(lambda: warnings_of(admin, ns, name, "TensorBoardUnavailable"), "the Warning")
    assert "emptyDir volume 'model'" in warned[0] and "PersistentVolumeClaim" in warned[0]
    # more passes (pods change phase) tell it no more
    for pod in admin.pods(ns, name):
        admin.set_pod_phase(ns, pod, "Running", pod_ip="127.0.0.1")
    wait(lambda: (admin.tfjob(ns, name) or {}).get("status", {}).get("conditions"), "status")
    assert len(warnings_of(admin, ns, name, "TensorBoardUnavailable")) == 1
    assert admin.find(f"{DEPLOYMENTS.format(ns=ns)}/{name}-tensorboard") is None


def test_no_annotation_no_tensorboard(admin: Api, ns: str) -> None:
    name = unique("plain")
    admin.create_tfjob(ns, board_job(name, None, "/model/run", {"hostPath": {"path": "/srv"}}))
    wait(lambda: len(admin.pods(ns, name)) == 3, "the job's 3 pods")
    link = unique("link")
    admin.create_tfjob(ns, board_job(link, "https://tb.example/x", "/model/run", {"emptyDir": {}}))
    wait(lambda: len(admin.pods(ns, link)) == 3, "the other job's 3 pods")
    for job in (name, link):
        found = admin.get(
            f"{DEPLOYMENTS.format(ns=ns)}?labelSelector=taas.dev/tensorboard-for={job}"
        )
        assert found["items"] == []
    assert not warnings_of(admin, ns, link, "TensorBoardUnavailable")
