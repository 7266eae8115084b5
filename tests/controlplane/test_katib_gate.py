"""The gate in front of Katib's db-manager (taas_controlplane.cluster.katib.gate): a pod reports
only its own trial's observation logs, and reads or deletes none; the host may do all.

Real parts: Katib's request messages are encoded by protobuf itself (the message types of
Katib's api.proto, made at run time), the pods and Trials live in a real apiserver (Katib's own
Trial CRD), and the calls go over gRPC through the gate to a real db-manager on PostgreSQL.
The test client is on 127.0.0.1, so a pod object given that address (its status written as
the kubelet would) makes the client that pod in the gate's eyes.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from taas_controlplane.cluster.katib import KatibOptions, KatibStack
from taas_controlplane.cluster.katib import config as katib_config
from taas_controlplane.cluster.katib.gate import (
    REPORT,
    SERVICE,
    TRIAL_LABEL,
    Gate,
    MalformedRequest,
    Pods,
    peer_address,
    serve,
    trial_name,
)
from taas_controlplane.cluster.katib.host_processes import gate_argv
from taas_controlplane.cluster.katib.stack import GATE_USER
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_controlplane.node.host_network import NetworkConfig
from taas_operator.apiserver.blocking import Connection
from taas_operator.processes import free_ports

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]

#: Katib's api.proto (v1beta1), the messages the DBManager methods take.
_FIELDS = {
    "Metric": [("name", 1, "string"), ("value", 2, "string")],
    "MetricLog": [("time_stamp", 1, "string"), ("metric", 2, ".api.v1.beta1.Metric")],
    "ObservationLog": [("metric_logs", 1, "repeated .api.v1.beta1.MetricLog")],
    "ReportObservationLogRequest": [
        ("trial_name", 1, "string"),
        ("observation_log", 2, ".api.v1.beta1.ObservationLog"),
    ],
    "GetObservationLogRequest": [
        ("trial_name", 1, "string"),
        ("metric_name", 2, "string"),
        ("start_time", 3, "string"),
        ("end_time", 4, "string"),
    ],
    "GetObservationLogReply": [("observation_log", 1, ".api.v1.beta1.ObservationLog")],
    "DeleteObservationLogRequest": [("trial_name", 1, "string")],
}


def _messages() -> dict[str, Any]:
    proto = descriptor_pb2.FileDescriptorProto(name="katib_api.proto", package="api.v1.beta1")
    for name, fields in _FIELDS.items():
        message = proto.message_type.add(name=name)
        for field_name, number, kind in fields:
            repeated = kind.startswith("repeated ")
            kind = kind.removeprefix("repeated ")
            field = message.field.add(name=field_name, number=number)
            field.label = field.LABEL_REPEATED if repeated else field.LABEL_OPTIONAL
            if kind == "string":
                field.type = field.TYPE_STRING
            else:
                field.type, field.type_name = field.TYPE_MESSAGE, kind
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"api.v1.beta1.{name}"))
        for name in _FIELDS
    }


M = _messages()


def _report(trial: str, value: str = "0.5") -> bytes:
    log = M["ObservationLog"](
        metric_logs=[
            M["MetricLog"](
                time_stamp="2026-12-02T14:00:00Z", metric=M["Metric"](name="loss", value=value)
            )
        ]
    )
    return bytes(M["ReportObservationLogRequest"](trial_name=trial, observation_log=log)
                 .SerializeToString())  # fmt: skip


# -- the request's trial name ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["", "exp-abc123", "tri\u00e4l-\u6f22", "x" * 1000])
def test_trial_name_is_field_1_as_protobuf_encodes_it(name: str) -> None:
    assert trial_name(_report(name)) == name
    delete = M["DeleteObservationLogRequest"](trial_name=name).SerializeToString()
    assert trial_name(delete) == name
    get = M["GetObservationLogRequest"](trial_name=name, metric_name="m", end_time="t")
    assert trial_name(get.SerializeToString()) == name


def test_the_last_trial_name_wins_as_protobufs_parser_decides() -> None:
    merged = _report("first") + _report("second")  # concatenated messages merge
    parsed = M["ReportObservationLogRequest"].FromString(merged)
    assert parsed.trial_name == "second" == trial_name(merged)


@pytest.mark.parametrize(
    ("message", "why"),
    [
        (_report("abc")[:-3], "past the end|truncated"),
        (b"\x0a\x02\xff\xfe", "not UTF-8"),
        (b"\x0b", "wire type 3"),
        (b"\x08" + b"\xff" * 11, "truncated or overlong"),
        (b"\x00\x00", "field number 0"),
    ],
)
def test_a_malformed_request_is_refused_with_its_reason(message: bytes, why: str) -> None:
    with pytest.raises(MalformedRequest, match=why):
        trial_name(message)


def test_peer_addresses() -> None:
    assert peer_address("ipv4:10.244.0.7:41234") == "10.244.0.7"
    assert peer_address("ipv6:[::1]:41234") == "::1"


# -- decisions against a real apiserver -------------------------------------------------------
def _kubectl_json(plane: ControlPlane, *args: str, document: dict[str, Any] | None = None) -> None:
    plane.kubectl(*args, "-f", "-", input=json.dumps(document))


def _pod(
    plane: ControlPlane,
    namespace: str,
    name: str,
    address: str,
    labels: dict[str, str] | None = None,
    controller: str | None = None,
    host_network: bool = False,
    phase: str = "Running",
) -> None:
    owners = (
        [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": controller,
          "uid": "00000000-0000-0000-0000-000000000001", "controller": True}]
        if controller else []
    )  # fmt: skip
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {},
                     "ownerReferences": owners},
        "spec": {"hostNetwork": host_network, "nodeName": "n",
                 "containers": [{"name": "c", "image": "i"}]},
    }  # fmt: skip
    _kubectl_json(plane, "create", document=pod)
    status = {"status": {"phase": phase, "podIP": address, "podIPs": [{"ip": address}]}}
    plane.kubectl(
        "patch", "pod", name, "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps(status),
    )  # fmt: skip


def _trial(plane: ControlPlane, namespace: str, name: str) -> None:
    trial = {
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "Trial",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {},
    }
    _kubectl_json(plane, "create", document=trial)


@pytest.fixture(scope="module")
def control_plane() -> Iterator[ControlPlane]:
    """An apiserver of this module's own, not the session's: the gate knows a pod by its IP,
    and pods other tests play at 127.0.0.1 (the kubelet player's) would make this module's pod
    one of several at the caller's address (the full suite in CI: PERMISSION_DENIED)."""
    plane = ControlPlane()
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="module")
def katib_world(control_plane: ControlPlane) -> Iterator[Connection]:
    """Katib's Trial CRD, the gate's RBAC, two namespaces of pods and Trials; the gate user's
    connection."""
    source = katib_config.katib_source()
    for crd in katib_config.crd_files(source):
        control_plane.kubectl("apply", "--server-side", "-f", str(crd))
    control_plane.kubectl("wait", "--for=condition=Established", "crd/trials.kubeflow.org")
    _kubectl_json(
        control_plane, "apply", document={"apiVersion": "v1", "kind": "List",
                                          "items": katib_config.gate_rbac(GATE_USER)})  # fmt: skip
    label = TRIAL_LABEL
    for ns in ("gate-a", "gate-b"):
        control_plane.kubectl("create", "namespace", ns)
    _trial(control_plane, "gate-a", "exp-t1")
    _trial(control_plane, "gate-b", "exp-t9")
    # the trial's own pod, and what others try
    _pod(control_plane, "gate-a", "exp-t1-worker-0", "10.1.0.1", {label: "exp-t1"}, "exp-t1")
    _pod(control_plane, "gate-a", "plain", "10.1.0.2")
    _pod(control_plane, "gate-b", "forger", "10.1.0.3", {label: "exp-t1"}, "exp-t1")
    _pod(control_plane, "gate-a", "no-owner", "10.1.0.4", {label: "exp-t1"})
    _pod(control_plane, "gate-a", "on-host", "10.1.0.5", {label: "exp-t1"}, "exp-t1", True)
    _pod(control_plane, "gate-a", "old", "10.1.0.6", {label: "exp-t1"}, "exp-t1", phase="Failed")
    _pod(control_plane, "gate-a", "new", "10.1.0.6")  # the old pod's address, reused
    yield Connection.load(control_plane.kubeconfig_for(GATE_USER))


@pytest.mark.builds("katib-db-manager")
def test_the_gate_decides_by_the_callers_pod(katib_world: Connection) -> None:
    gate = Gate(Pods(katib_world), {"10.99.0.1"})
    delete = SERVICE + "DeleteObservationLog"
    get = SERVICE + "GetObservationLog"
    report = _report("exp-t1")
    # the host: everything DBManager serves
    for method in (REPORT, get, delete):
        assert gate.refusal("10.99.0.1", method, report) is None
    # the trial's own pod reports its own trial, and nothing else
    assert gate.refusal("10.1.0.1", REPORT, report) is None
    cases = {
        ("10.1.0.1", delete, report): "pods may only report",
        ("10.1.0.1", get, report): "pods may only report",
        ("10.1.0.1", REPORT, _report("exp-t9")): "trial 'exp-t1''s, not 'exp-t9''s",
        ("10.1.0.2", REPORT, report): "carries no katib.kubeflow.org/trial label",
        ("10.1.0.3", REPORT, report): "no Trial 'exp-t1' in namespace 'gate-b'",
        ("10.1.0.4", REPORT, report): "not made by trial 'exp-t1''s job",
        ("10.1.0.5", REPORT, report): "not the address of exactly one pod",
        ("10.1.0.6", REPORT, report): "pod gate-a/new carries no",
        ("10.1.0.9", REPORT, report): r"found: none",
        ("10.1.0.1", REPORT, b"\x0b"): "not a ReportObservationLogRequest",
    }
    for (peer, method, request), why in cases.items():
        refusal = gate.refusal(peer, method, request)
        assert refusal is not None and why in refusal.reason, (peer, method, refusal)
        assert refusal.code == (
            "INVALID_ARGUMENT" if "not a Report" in why else "PERMISSION_DENIED"
        )
    refusal = gate.refusal("10.99.0.1", "/grpc.reflection.v1.ServerReflection/Info", b"")
    assert refusal is not None and refusal.code == "UNIMPLEMENTED"


@pytest.fixture(scope="module")
def db_manager(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A real db-manager on loopback (PostgreSQL beside it), as Katib's stack starts it."""
    stack = KatibStack(
        control_plane, tmp_path_factory.mktemp("katib"), NetworkConfig(), lambda _: None,
        KatibOptions(),
    )  # fmt: skip
    try:
        yield stack.start_db_manager(timeout=120)
    finally:
        stack.stop()


def _call(address: str, method: str, request: bytes) -> bytes:
    with grpc.insecure_channel(address) as channel:
        return bytes(channel.unary_unary(method)(request, timeout=20))


def _values(gate: str, request: bytes) -> list[str]:
    """The metric values db-manager holds for the request's trial (read as the host)."""
    answer = _call(gate, SERVICE + "GetObservationLog", request)
    reply = M["GetObservationLogReply"].FromString(answer)
    return [m.metric.value for m in reply.observation_log.metric_logs]


@pytest.mark.builds("katib-db-manager")
def test_through_the_gate_a_pod_reports_its_trial_and_reads_or_deletes_nothing(
    control_plane: ControlPlane, katib_world: Connection, db_manager: str
) -> None:
    label = TRIAL_LABEL
    _pod(control_plane, "gate-a", "exp-t2-worker-0", "127.0.0.1", {label: "exp-t2"}, "exp-t2")
    _trial(control_plane, "gate-a", "exp-t2")
    pod_gate, host_gate = (f"127.0.0.1:{port}" for port in free_ports(2))
    # the same client is a pod to one gate (its address is the pod's), the host to the other
    as_pod = serve(pod_gate, db_manager, Gate(Pods(katib_world), set()))
    as_host = serve(host_gate, db_manager, Gate(Pods(katib_world), {"127.0.0.1"}))
    try:
        get = M["GetObservationLogRequest"](trial_name="exp-t2").SerializeToString()
        delete = M["DeleteObservationLogRequest"](trial_name="exp-t2").SerializeToString()
        # the pod reports its own trial's log; db-manager has it
        _call(pod_gate, REPORT, _report("exp-t2", "0.25"))
        assert _values(host_gate, get) == ["0.25"]
        # another trial's report, a read, a delete: refused, and the log is as it was
        for method, request, why in (
            (REPORT, _report("exp-t1", "9"), "not 'exp-t1''s"),
            (SERVICE + "GetObservationLog", get, "pods may only report"),
            (SERVICE + "DeleteObservationLog", delete, "pods may only report"),
        ):
            with pytest.raises(grpc.RpcError) as refused:
                _call(pod_gate, method, request)
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert why in (refused.value.details() or "")
        assert _values(host_gate, get) == ["0.25"]
        # a message over the limit is refused before anything is decided
        with pytest.raises(grpc.RpcError) as big:
            _call(pod_gate, REPORT, _report("exp-t2", "x" * (5 * 2**20)))
        assert big.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        # the host deletes
        _call(host_gate, SERVICE + "DeleteObservationLog", delete)
        assert _values(host_gate, get) == []
    finally:
        as_pod.stop(None)
        as_host.stop(None)
        control_plane.kubectl("delete", "pod", "-n", "gate-a", "exp-t2-worker-0", "--wait=false")


@pytest.mark.builds("katib-db-manager")
def test_the_gate_process_as_the_stack_starts_it_forwards_the_hosts_calls(
    control_plane: ControlPlane, katib_world: Connection, db_manager: str, tmp_path: Path
) -> None:
    """`python -m taas_controlplane.cluster.katib.gate` with the stack's arguments (its own user's
    kubeconfig), on loopback: the host's report and read go through; an unknown method not."""
    (port,) = free_ports(1)
    listen = f"127.0.0.1:{port}"
    argv = gate_argv(listen, db_manager, control_plane.kubeconfig_for(GATE_USER))
    log = (tmp_path / "gate.log").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        assert proc.poll() is None, (tmp_path / "gate.log").read_text()
        _call(listen, REPORT, _report("exp-t3", "0.75"))
        get = M["GetObservationLogRequest"](trial_name="exp-t3").SerializeToString()
        assert _values(listen, get) == ["0.75"]
        with pytest.raises(grpc.RpcError) as unknown:
            _call(listen, "/grpc.reflection.v1alpha.ServerReflection/Info", b"")
        assert unknown.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
