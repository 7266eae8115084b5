"""Bad TFJob specs, one per rule, with the field path and message both kubectl and pydantic give.

Shared by tests/core/test_validation.py (pydantic only) and tests/api/test_crd.py (the same
specs applied to a real kube-apiserver).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from taas_operator.api import messages


def good(name: str = "good") -> dict[str, Any]:
    """A minimal valid TFJob: 1 PS, 2 workers."""
    container = {"name": "tensorflow", "image": "example/train:1"}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {
            "tfReplicaSpecs": {
                "PS": {"template": {"spec": {"containers": [dict(container)]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [dict(container)]}}},
            }
        },
    }


def _edit(fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    obj = copy.deepcopy(good("bad"))
    fn(obj)
    return obj


def _worker(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["tfReplicaSpecs"]["Worker"]


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return _worker(obj)["template"]["spec"]["containers"]


def _rename(obj: dict[str, Any], name: str) -> None:
    obj["metadata"]["name"] = name


#: (rule id, bad manifest, field path, message); the paths are the apiserver's own.
BAD = [
    (
        "no-tensorflow-container",
        _edit(lambda o: _containers(o)[0].update(name="main")),
        "spec.tfReplicaSpecs[Worker].template.spec.containers",
        messages.NO_TENSORFLOW_CONTAINER,
    ),
    (
        "container-without-image",
        _edit(lambda o: _containers(o).append({"name": "sidecar"})),
        "spec.tfReplicaSpecs[Worker].template.spec.containers[1].image",
        messages.NO_IMAGE,
    ),
    (
        "no-containers",
        _edit(lambda o: _worker(o)["template"]["spec"].update(containers=[])),
        "spec.tfReplicaSpecs[Worker].template.spec.containers",
        messages.NO_CONTAINERS,
    ),
    (
        "chief-and-master",
        _edit(
            lambda o: o["spec"]["tfReplicaSpecs"].update(
                Chief=copy.deepcopy(_worker(o)), master=copy.deepcopy(_worker(o))
            )
        ),
        "spec.tfReplicaSpecs",
        messages.CHIEF_AND_MASTER,
    ),
    (
        "unknown-replica-type",
        _edit(lambda o: o["spec"]["tfReplicaSpecs"].update(Trainer=copy.deepcopy(_worker(o)))),
        "spec.tfReplicaSpecs",
        messages.UNKNOWN_REPLICA_TYPE,
    ),
    (
        "duplicate-replica-type",
        _edit(lambda o: o["spec"]["tfReplicaSpecs"].update(worker=copy.deepcopy(_worker(o)))),
        "spec.tfReplicaSpecs",
        messages.DUPLICATE_REPLICA_TYPE,
    ),
    (
        "negative-replicas",
        _edit(lambda o: _worker(o).update(replicas=-1)),
        "spec.tfReplicaSpecs[Worker].replicas",
        messages.NEGATIVE_REPLICAS,
    ),
    (
        "replicas-past-int32",  # issue 29: 2**31 - 1 replicas passed every check
        _edit(lambda o: _worker(o).update(replicas=2147483647)),
        "spec.tfReplicaSpecs[Worker].replicas",
        messages.TOO_MANY_REPLICAS,
    ),
    (
        "replicas-one-past-the-maximum",
        _edit(lambda o: _worker(o).update(replicas=5001)),
        "spec.tfReplicaSpecs[Worker].replicas",
        messages.TOO_MANY_REPLICAS,
    ),
    (
        "replicas-past-the-maximum-in-total",  # 5,000 workers and 1 PS
        _edit(lambda o: _worker(o).update(replicas=5000)),
        "spec.tfReplicaSpecs",
        messages.TOO_MANY_REPLICAS_IN_TOTAL,
    ),
    (
        "name-not-dns-1035",
        _edit(lambda o: _rename(o, "1st-job")),
        "metadata.name",
        messages.NAME_DNS1035,
    ),
    (
        "name-with-dot",
        _edit(lambda o: _rename(o, "my.job")),
        "metadata.name",
        messages.NAME_DNS1035,
    ),
    (
        "restart-policy-enum",
        _edit(lambda o: _worker(o).update(restartPolicy="Sometimes")),
        "spec.tfReplicaSpecs.Worker.restartPolicy",
        'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never", '
        '"ExitCode"',
    ),
    (
        "clean-pod-policy-enum",
        _edit(lambda o: o["spec"].update(runPolicy={"cleanPodPolicy": "Some"})),
        "spec.runPolicy.cleanPodPolicy",
        'Unsupported value: "Some": supported values: "All", "Running", "None"',
    ),
    (
        "min-available-above-replicas",
        _edit(lambda o: o["spec"].update(runPolicy={"schedulingPolicy": {"minAvailable": 4}})),
        "spec.runPolicy.schedulingPolicy.minAvailable",
        messages.MIN_AVAILABLE_ABOVE_REPLICAS,
    ),
    (
        "backoff-limit-minimum",
        _edit(lambda o: o["spec"].update(runPolicy={"backoffLimit": -1})),
        "spec.runPolicy.backoffLimit",
        "Invalid value: -1: spec.runPolicy.backoffLimit in body should be greater than or equal "
        "to 0",
    ),
    # issue 39: an int64 deadline passed, then every pass over the job failed (date overflow)
    (
        "active-deadline-past-int32",
        _edit(lambda o: o["spec"].update(runPolicy={"activeDeadlineSeconds": 2**63 - 1})),
        "spec.runPolicy.activeDeadlineSeconds",
        "Invalid value: 9223372036854775807: spec.runPolicy.activeDeadlineSeconds in body "
        "should be less than or equal to 2147483647",
    ),
    (
        "ttl-past-int32",
        _edit(lambda o: o["spec"].update(runPolicy={"ttlSecondsAfterFinished": 2**31})),
        "spec.runPolicy.ttlSecondsAfterFinished",
        "Invalid value: 2147483648: spec.runPolicy.ttlSecondsAfterFinished in body should be "
        "less than or equal to 2147483647",
    ),
    (
        "backoff-limit-past-int32",
        _edit(lambda o: o["spec"].update(runPolicy={"backoffLimit": 2**40})),
        "spec.runPolicy.backoffLimit",
        "Invalid value: 1099511627776: spec.runPolicy.backoffLimit in body should be less than "
        "or equal to 2147483647",
    ),
    (
        "schedule-timeout-negative",
        _edit(
            lambda o: o["spec"].update(
                runPolicy={"schedulingPolicy": {"scheduleTimeoutSeconds": -5}}
            )
        ),
        "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds",
        "Invalid value: -5: spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds in body "
        "should be greater than or equal to 0",
    ),
    (
        "container-port-past-65535",
        _edit(lambda o: _containers(o)[0].update(ports=[{"containerPort": 70000}])),
        "spec.tfReplicaSpecs.Worker.template.spec.containers[0].ports[0].containerPort",
        "Invalid value: 70000: spec.tfReplicaSpecs.Worker.template.spec.containers[0].ports[0]"
        ".containerPort in body should be less than or equal to 65535",
    ),
    (
        "pod-deadline-past-int32",
        _edit(lambda o: _worker(o)["template"]["spec"].update(activeDeadlineSeconds=2**31)),
        "spec.tfReplicaSpecs.Worker.template.spec.activeDeadlineSeconds",
        "Invalid value: 2147483648: spec.tfReplicaSpecs.Worker.template.spec."
        "activeDeadlineSeconds in body should be less than or equal to 2147483647",
    ),
]

# Written exactly as Kubeflow's TFJob guide and its dist-mnist e2e example show them.
KUBEFLOW_GUIDE = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  generateName: tfjob
spec:
  tfReplicaSpecs:
    PS:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          annotations:
            sidecar.istio.io/inject: "false"
        spec:
          containers:
            - name: tensorflow
              image: gcr.io/your-project/your-image
              command:
                - python
                - -m
                - trainer.task
                - --batch_size=32
                - --training_steps=1000
              env:
                - name: GOOGLE_APPLICATION_CREDENTIALS
                  value: "/etc/secrets/user-gcp-sa.json"
              volumeMounts:
                - name: sa
                  mountPath: "/etc/secrets"
                  readOnly: true
          volumes:
            - name: sa
              secret:
                secretName: user-gcp-sa
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          annotations:
            sidecar.istio.io/inject: "false"
        spec:
          containers:
            - name: tensorflow
              image: gcr.io/your-project/your-image
              command:
                - python
                - -m
                - trainer.task
                - --batch_size=32
                - --training_steps=1000
"""

DIST_MNIST = """
apiVersion: "kubeflow.org/v1"
kind: "TFJob"
metadata:
  name: "dist-mnist-for-e2e-test"
spec:
  tfReplicaSpecs:
    PS:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
    Worker:
      replicas: 4
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
"""
