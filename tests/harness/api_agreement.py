"""The table `kubectl apply` and `taas validate` must answer alike (tests/api/test_agreement.py).

Each case is a manifest (a dict, or YAML text sent as it is) and what both must say: accepted
(`expect=None`), or refused naming `path` with a message containing `phrase`. It holds the good
manifests, every bad case of issue 11 (pod-template type errors, a string where a list belongs,
a name too long for its replicas, `runPolicy:` null, a missing apiVersion, a string
`template.metadata`), the per-rule cases of `cases.BAD` and a few more that pin the apiserver's
order of work (unknown fields, nulls, defaults, list types).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, NamedTuple

from taas_operator.api import messages
from tests.harness.api_cases import BAD, DIST_MNIST, KUBEFLOW_GUIDE, good

WORKER = "spec.tfReplicaSpecs.Worker"
TEMPLATE = f"{WORKER}.template"
TF = f"{TEMPLATE}.spec.containers[0]"
# list-type and CEL errors write a map key in brackets
TF_BRACKETS = "spec.tfReplicaSpecs[Worker].template.spec.containers[0]"


class Case(NamedTuple):
    id: str
    manifest: dict[str, Any] | str
    expect: tuple[str, str] | None  # (path, phrase) both must name; None: both accept


def _edit(fn: Callable[[dict[str, Any]], Any], name: str = "bad") -> dict[str, Any]:
    obj = copy.deepcopy(good(name))
    fn(obj)
    return obj


def _worker(o: dict[str, Any]) -> dict[str, Any]:
    return o["spec"]["tfReplicaSpecs"]["Worker"]


def _tf(o: dict[str, Any]) -> dict[str, Any]:
    return _worker(o)["template"]["spec"]["containers"][0]


def _pod(o: dict[str, Any]) -> dict[str, Any]:
    return _worker(o)["template"]["spec"]


def _sidecars(count: int) -> list[dict[str, str]]:
    return [{"name": f"c{i}", "image": "x"} for i in range(count)]


def _more_types(o: dict[str, Any], count: int) -> dict[str, Any]:
    return {f"t{i}": copy.deepcopy(_worker(o)) for i in range(count)}


def nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every field and item below `value`."""
    found = [path] if path else []
    if isinstance(value, dict | list):
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            found += nodes(item, (*path, key))
    return found


def _type(path: str, wanted: str) -> tuple[str, str]:
    return path, f"{path} in body must be of type {wanted}"


FULL_TEMPLATE = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: full
  labels: {team: ml}
spec:
  runPolicy: {backoffLimit: 3, activeDeadlineSeconds: 600, cleanPodPolicy: All}
  successPolicy: AllWorkers
  tfReplicaSpecs:
    worker:
      replicas: 2.0
      restartPolicy: ExitCode
      template:
        metadata:
          labels: {app: mnist}
          annotations: {built: 2024-01-01, sidecar.istio.io/inject: "false"}
        spec:
          terminationGracePeriodSeconds: 30
          nodeSelector: {disk: ssd}
          tolerations: [{key: gpu, operator: Exists}, {key: gpu, operator: Exists}]
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                  - matchExpressions: [{key: zone, operator: In, values: [a, b]}]
          initContainers:
            - {name: fetch, image: busybox, command: [sh, -c, "true"]}
          containers:
            - name: tensorflow
              image: example/train:1
              workingDir: /work
              command: [python, train.py]
              args: ["--steps=10", "--steps=10"]
              ports:
                - {name: tfjob-port, containerPort: 2222}
                - {name: metrics, containerPort: 9090, protocol: TCP}
              env:
                - {name: MODE, value: train}
                - name: NODE
                  valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
                - name: CONFIG
                  valueFrom: {configMapKeyRef: {key: config}}
              resources:
                requests: {cpu: 500m, memory: 1Gi}
                limits: {cpu: 2, memory: 2Gi, nvidia.com/gpu: 1}
              readinessProbe:
                httpGet: {path: /healthz, port: metrics}
              livenessProbe:
                tcpSocket: {port: 2222}
              securityContext:
                runAsNonRoot: true
                allowPrivilegeEscalation: false
                capabilities: {drop: [ALL]}
              volumeMounts: [{name: data, mountPath: /data}]
          volumes:
            - {name: data, emptyDir: {}}
"""

GOOD = [
    Case("minimal", good(), None),
    Case("kubeflow-guide", KUBEFLOW_GUIDE.replace("generateName: tfjob", "name: guide"), None),
    Case("kubeflow-dist-mnist", DIST_MNIST, None),
    Case("full-pod-template", FULL_TEMPLATE, None),
    Case("runPolicy-null", _edit(lambda o: o["spec"].update(runPolicy=None), "ok"), None),
    Case(
        "nulls-are-dropped",
        _edit(lambda o: (_worker(o).update(replicas=None), _tf(o).update(env=None)), "ok"),
        None,
    ),
    # 54 + len("-worker-1") = 63: the longest name two workers allow
    Case("name-at-the-limit", good("n" * 54), None),
]

PART_1 = [
    Case("env-as-map", _edit(lambda o: _tf(o).update(env={"A": "1"})), _type(f"{TF}.env", "array")),
    Case(
        "env-as-strings",
        _edit(lambda o: _tf(o).update(env=["A=1"])),
        _type(f"{TF}.env[0]", "object"),
    ),
    Case(
        "ports-as-map",
        _edit(lambda o: _tf(o).update(ports={"tfjob-port": 2222})),
        _type(f"{TF}.ports", "array"),
    ),
    Case(
        "containerPort-abc",
        _edit(lambda o: _tf(o).update(ports=[{"containerPort": "abc"}])),
        _type(f"{TF}.ports[0].containerPort", "integer"),
    ),
    Case(
        "labels-as-list",
        _edit(lambda o: _worker(o)["template"].update(metadata={"labels": ["a=b"]})),
        _type(f"{TEMPLATE}.metadata.labels", "object"),
    ),
    Case(
        "annotations-as-string",
        _edit(lambda o: _worker(o)["template"].update(metadata={"annotations": "a=b"})),
        _type(f"{TEMPLATE}.metadata.annotations", "object"),
    ),
    Case(
        "args-as-string",
        _edit(lambda o: _tf(o).update(args="--max_steps=10")),
        _type(f"{TF}.args", "array"),
    ),
    Case(
        "command-as-string",
        _edit(lambda o: _tf(o).update(command="python -c 'print(1)'")),
        _type(f"{TF}.command", "array"),
    ),
    Case(
        "terminationGracePeriodSeconds-x",
        _edit(lambda o: _pod(o).update(terminationGracePeriodSeconds="x")),
        _type(f"{TEMPLATE}.spec.terminationGracePeriodSeconds", "integer"),
    ),
    Case(
        "workingDir-5",
        _edit(lambda o: _tf(o).update(workingDir=5)),
        _type(f"{TF}.workingDir", "string"),
    ),
    Case(
        "cpu-lots",
        _edit(lambda o: _tf(o).update(resources={"limits": {"cpu": "lots"}})),
        (f"{TF}.resources.limits.cpu", "should match"),
    ),
    Case(
        "env-name-twice",
        _edit(lambda o: _tf(o).update(env=[{"name": "A"}, {"name": "A", "value": "1"}])),
        (f"{TF_BRACKETS}.env[1]", 'Duplicate value: {"name":"A"}'),
    ),
    Case(
        "container-name-twice",
        _edit(lambda o: _pod(o)["containers"].append({"name": "tensorflow", "image": "x"})),
        ("spec.tfReplicaSpecs[Worker].template.spec.containers[1]", "Duplicate value"),
    ),
    Case(
        "env-without-name",
        _edit(lambda o: _tf(o).update(env=[{"value": "1"}])),
        (f"{TF}.env[0].name", "Required value"),
    ),
]

PART_2 = [
    Case(
        "name-too-long-for-worker-1",
        good("n" * 55),
        ("metadata.name", messages.NAME_TOO_LONG_FOR_REPLICAS),
    ),
    Case(
        "name-too-long-for-worker-100",
        _edit(lambda o: _worker(o).update(replicas=101), "n" * 53),
        ("metadata.name", messages.NAME_TOO_LONG_FOR_REPLICAS),
    ),
    Case(
        "no-apiVersion", _edit(lambda o: o.pop("apiVersion")), ("apiVersion", "apiVersion not set")
    ),
    Case("no-kind", _edit(lambda o: o.pop("kind")), ("kind", "kind not set")),
    Case(
        "template-metadata-string",
        _edit(lambda o: _worker(o)["template"].update(metadata="x")),
        _type(f"{TEMPLATE}.metadata", "object"),
    ),
]

ORDER_OF_WORK = [
    Case(
        "unknown-container-field",
        _edit(lambda o: _tf(o).update(imagePolicy="Always")),
        (f"{TF}.imagePolicy", f'unknown field "{TF}.imagePolicy"'),
    ),
    Case(
        "unknown-status-field",
        _edit(lambda o: o.update(status={"phase": "Done"})),
        ("status.phase", 'unknown field "status.phase"'),
    ),
    Case(
        "replicas-as-string",
        _edit(lambda o: _worker(o).update(replicas="2")),
        _type(f"{WORKER}.replicas", "integer"),
    ),
    Case(
        "restartPolicy-as-number",
        _edit(lambda o: _worker(o).update(restartPolicy=5)),
        _type(f"{WORKER}.restartPolicy", "string"),
    ),
    Case(
        "containers-null",
        _edit(lambda o: _pod(o).update(containers=None)),
        (f"{TEMPLATE}.spec.containers", "Required value"),
    ),
    Case(
        "env-item-null",
        _edit(lambda o: _tf(o).update(env=[None])),
        _type(f"{TF}.env[0]", "object"),
    ),
    Case(
        "image-null",
        _edit(lambda o: _tf(o).update(image=None)),
        (f"{TF_BRACKETS}.image", messages.NO_IMAGE),
    ),
    Case(
        "port-twice-with-default-protocol",
        _edit(lambda o: _tf(o).update(ports=[{"containerPort": 1}, {"containerPort": 1}])),
        (f"{TF_BRACKETS}.ports[1]", 'Duplicate value: {"containerPort":1,"protocol":"TCP"}'),
    ),
    Case(
        "probe-port-float",
        _edit(lambda o: _tf(o).update(livenessProbe={"httpGet": {"port": 1.5}})),
        _type(f"{TF}.livenessProbe.httpGet.port", "integer,string"),
    ),
    Case(
        "nodeSelector-number",
        _edit(lambda o: _pod(o).update(nodeSelector={"disk": 5})),
        _type(f"{TEMPLATE}.spec.nodeSelector.disk", "string"),
    ),
    Case(
        "container-name-too-long",
        _edit(lambda o: _tf(o).update(name="n" * 254)),
        (f"{TF}.name", "Too long: may not be more than 253 bytes"),
    ),
    Case(
        "65-containers",
        _edit(lambda o: _pod(o)["containers"].extend(_sidecars(64))),
        (f"{TEMPLATE}.spec.containers", "Too many: 65: must have at most 64 items"),
    ),
    Case(
        "eleven-replica-types",
        _edit(lambda o: o["spec"]["tfReplicaSpecs"].update(_more_types(o, 9))),
        ("spec.tfReplicaSpecs", "Too many: 11: must have at most 10 items"),
    ),
    Case(
        "type-error-hides-cel-errors",
        _edit(lambda o: (_tf(o).update(workingDir=5), _worker(o).update(replicas=-1))),
        _type(f"{TF}.workingDir", "string"),
    ),
]

PER_RULE = [Case(f"rule-{rule}", obj, (path, message)) for rule, obj, path, message in BAD]

CASES = GOOD + PART_1 + PART_2 + ORDER_OF_WORK + PER_RULE
