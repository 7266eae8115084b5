"""The gate in front of Katib's db-manager: what pods may ask of it, decided per call.

    python -m taas_controlplane.cluster.katib.gate --listen 10.244.0.1:PORT \
        --upstream 127.0.0.1:PORT --kubeconfig K --host-address 10.244.0.1 --host-address 127.0.0.1
    trial_name(request_bytes) -> str                 # field 1 of a DBManager request
    Gate(pods, host_addresses).refusal(peer, method, request) -> Refusal | None

db-manager has no authentication: whoever reaches it may report, read or delete any trial's
observation logs. So it listens on 127.0.0.1 only, and this gate listens where pods reach it
(the bridge address, `KATIB_DB_MANAGER_SERVICE_IP/_PORT` of katib-controller, which passes it to
the metrics collectors it injects). The gate forwards each call's bytes as they are (a gRPC
generic handler; every DBManager method is unary-unary), and decides by the caller's address:

- the host itself (`--host-address`: the bridge address, 127.0.0.1): katib-controller, which
  reads and deletes observation logs: every DBManager method and health's Check are forwarded;
- anything else must be a pod reporting its own trial's logs: only `ReportObservationLog`, and
  only when the caller's address is that of exactly one live pod (not hostNetwork) that carries
  Katib's trial label (`katib.kubeflow.org/trial`, set by Katib's pod webhook) equal to the
  request's `trial_name`, whose controller (the trial's TFJob or Job) has the trial's name, and
  a Trial of that name exists in the pod's namespace. Every other call is refused with
  PERMISSION_DENIED and the reason.

Pod addresses are not forged across namespaces here: the bridge CNI does no NAT (a pod's
address reaches the host as it is), the kernel drops packets from outside bearing a host
address, and TCP needs the answer to reach the claimed address. What a pod sends is bounded:
4 MiB a message (gRPC's default, Katib's Go clients' own receive limit), `CONCURRENT_CALLS` calls
at once (more get RESOURCE_EXHAUSTED), a lookup of the apiserver per pod address and per trial at
most every `CACHE_SECONDS`, `CACHE_ENTRIES` of each kept.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from taas_operator.apiserver.blocking import Connection
from taas_operator.apiserver.errors import ApiError, NotFound, Request

SERVICE = "/api.v1.beta1.DBManager/"
REPORT = SERVICE + "ReportObservationLog"
#: What the host may call (katib-controller): every unary method db-manager serves.
HOST_METHODS = frozenset(
    {
        REPORT,
        SERVICE + "GetObservationLog",
        SERVICE + "DeleteObservationLog",
        "/grpc.health.v1.Health/Check",
    }
)
TRIAL_LABEL = "katib.kubeflow.org/trial"
MESSAGE_LIMIT = 4 * 2**20
CONCURRENT_CALLS = 32
WORKERS = 8
CACHE_SECONDS = 5.0
CACHE_ENTRIES = 4096
#: How long a forwarded call may take at most (db-manager answers in milliseconds).
UPSTREAM_TIMEOUT_S = 30.0


class MalformedRequest(ValueError):
    """The request's bytes are not a protobuf message with a UTF-8 field 1."""


def trial_name(message: bytes) -> str:
    """Field 1 (`trial_name`, a string) of a DBManager request, decoded by hand: the last one
    given wins, as protobuf parsers do; "" when absent. Raises MalformedRequest."""
    found = b""
    at, end = 0, len(message)
    while at < end:
        key, at = _varint(message, at)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise MalformedRequest("field number 0")
        if wire == 0:
            _, at = _varint(message, at)
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        elif wire == 2:
            size, at = _varint(message, at)
            if field == 1:
                found = message[at : at + size]
            at += size
        else:
            raise MalformedRequest(f"wire type {wire} of field {field} (groups are not used here)")
        if at > end:
            raise MalformedRequest("a field runs past the end of the message")
    try:
        return found.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedRequest("trial_name is not UTF-8") from None


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise MalformedRequest("a truncated or overlong varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if byte < 0x80:
            return value, at


@dataclass(frozen=True)
class PodIdentity:
    """What the gate needs of the pod at an address."""

    namespace: str
    name: str
    trial: str | None  # its Katib trial label
    controller: str | None  # its controller owner's name
    host_network: bool


@dataclass(frozen=True)
class Refusal:
    """Why a call is refused, and the gRPC status name to refuse it with."""

    code: str
    reason: str


K = TypeVar("K")
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    """At most `entries` answers, each kept `seconds`; thread-safe. Bounds how often one key
    is looked up and how much is kept."""

    def __init__(self, seconds: float, entries: int) -> None:
        self.seconds, self.entries = seconds, entries
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, load: Callable[[K], V]) -> V:
        now = time.monotonic()
        with self._lock:
            held = self._items.get(key)
            if held is not None and held[0] > now:
                return held[1]
        value = load(key)
        with self._lock:
            self._items[key] = (now + self.seconds, value)
            self._items.move_to_end(key)
            while len(self._items) > self.entries:
                self._items.popitem(last=False)
        return value


class Pods:
    """Pods by address and Trials by name, read from the apiserver, each answer cached."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._pods: TtlCache[str, list[PodIdentity]] = TtlCache(CACHE_SECONDS, CACHE_ENTRIES)
        self._trials: TtlCache[tuple[str, str], bool] = TtlCache(CACHE_SECONDS, CACHE_ENTRIES)

    def at(self, address: str) -> list[PodIdentity]:
        """The live (not finished) pods whose address is `address`."""
        return self._pods.get(address, self._list_pods)

    def trial_exists(self, namespace: str, name: str) -> bool:
        return self._trials.get((namespace, name), self._get_trial)

    def _list_pods(self, address: str) -> list[PodIdentity]:
        query = {"fieldSelector": f"status.podIP={address}", "limit": "16"}
        found = self.connection.call(Request("list", "pods"), "GET", "/api/v1/pods", query)
        return [
            _identity(pod)
            for pod in found.get("items") or []
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]

    def _get_trial(self, key: tuple[str, str]) -> bool:
        namespace, name = key
        path = f"/apis/kubeflow.org/v1beta1/namespaces/{quote(namespace)}/trials/{quote(name)}"
        try:
            self.connection.call(Request("get", "trials", namespace, name), "GET", path)
        except NotFound:
            return False
        return True


def _identity(pod: dict[str, Any]) -> PodIdentity:
    meta = pod.get("metadata") or {}
    owners = [o for o in meta.get("ownerReferences") or [] if o.get("controller")]
    return PodIdentity(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        trial=(meta.get("labels") or {}).get(TRIAL_LABEL),
        controller=owners[0].get("name") if owners else None,
        host_network=bool((pod.get("spec") or {}).get("hostNetwork")),
    )


class Gate:
    """The decisions (see the module): `refusal` is None for a call to forward."""

    def __init__(self, pods: Pods, host_addresses: set[str]) -> None:
        self.pods = pods
        self.host_addresses = frozenset(host_addresses)

    def refusal(self, peer: str, method: str, request: bytes) -> Refusal | None:
        if method not in HOST_METHODS:
            return Refusal("UNIMPLEMENTED", f"the gate forwards no {method}")
        if peer in self.host_addresses:
            return None
        if method != REPORT:
            return Refusal(
                "PERMISSION_DENIED",
                f"{method} from {peer}: pods may only report observation logs "
                "(ReportObservationLog, their own trial's); reads and deletes are "
                "katib-controller's, on the host",
            )
        try:
            trial = trial_name(request)
        except MalformedRequest as err:
            return Refusal("INVALID_ARGUMENT", f"not a ReportObservationLogRequest: {err}")
        try:
            return self._pod_refusal(peer, trial)
        except ApiError as err:
            return Refusal("UNAVAILABLE", f"cannot look up the pod at {peer}: {err}")

    def _pod_refusal(self, peer: str, trial: str) -> Refusal | None:
        pods = self.pods.at(peer)
        if len(pods) != 1 or pods[0].host_network:
            found = ", ".join(f"{p.namespace}/{p.name}" for p in pods) or "none"
            return _denied(
                f"{peer} is not the address of exactly one pod of its own network (found: "
                f"{found}); only a trial's pod may report observation logs"
            )
        pod = pods[0]
        where = f"pod {pod.namespace}/{pod.name}"
        if pod.trial is None:
            return _denied(f"{where} carries no {TRIAL_LABEL} label: it is no trial's pod")
        if pod.trial != trial:
            return _denied(
                f"{where} is trial {pod.trial!r}'s, not {trial!r}'s: a pod reports only its "
                "own trial's observation logs"
            )
        if pod.controller != trial:
            return _denied(
                f"{where} was not made by trial {trial!r}'s job (its controller: "
                f"{pod.controller or 'none'})"
            )
        if not self.pods.trial_exists(pod.namespace, trial):
            return _denied(f"no Trial {trial!r} in namespace {pod.namespace!r} (from {where})")
        return None


def _denied(reason: str) -> Refusal:
    return Refusal("PERMISSION_DENIED", reason)


def peer_address(peer: str) -> str:
    """The IP of gRPC's peer string (`ipv4:10.244.0.7:41234`, `ipv6:[::1]:41234`)."""
    kind, _, rest = peer.partition(":")
    address = rest.rsplit(":", 1)[0]
    return address.strip("[]") if kind == "ipv6" else address


def serve(listen: str, upstream: str, gate: Gate) -> Any:
    """Start the gate's gRPC server on `listen`, forwarding to `upstream`; returns the server
    (`.stop(grace)`; `.wait_for_termination()`)."""
    import grpc  # TensorFlow's dependency; imported here so the module's decisions need none

    limits = [
        ("grpc.max_receive_message_length", MESSAGE_LIMIT),
        ("grpc.max_send_message_length", MESSAGE_LIMIT),
    ]
    channel = grpc.insecure_channel(upstream, options=limits)

    def forward(method: str) -> Callable[[bytes, Any], bytes]:
        call = channel.unary_unary(method)  # no serializers: bytes in, bytes out

        def behaviour(request: bytes, context: Any) -> bytes:
            refused = gate.refusal(peer_address(context.peer()), method, request)
            if refused is not None:
                context.abort(getattr(grpc.StatusCode, refused.code), refused.reason)
            try:
                return bytes(call(request, timeout=UPSTREAM_TIMEOUT_S))
            except grpc.RpcError as err:
                context.abort(err.code(), err.details() or "")
                raise  # unreachable: abort raises

        return behaviour

    handlers = {m: grpc.unary_unary_rpc_method_handler(forward(m)) for m in HOST_METHODS}

    class Handler(grpc.GenericRpcHandler):
        def service(self, details: Any) -> Any:
            found = handlers.get(details.method)
            if found is None:
                return grpc.unary_unary_rpc_method_handler(
                    lambda request, context: context.abort(
                        grpc.StatusCode.UNIMPLEMENTED, f"the gate forwards no {details.method}"
                    )
                )
            return found

    server = grpc.server(
        ThreadPoolExecutor(WORKERS, thread_name_prefix="gate"),
        handlers=[Handler()],
        options=limits,
        maximum_concurrent_rpcs=CONCURRENT_CALLS,
    )
    try:
        port = server.add_insecure_port(listen)
    except RuntimeError as err:  # newer grpcio raises, older returns 0
        raise OSError(f"cannot listen on {listen}: {err}") from None
    if port == 0:
        raise OSError(f"cannot listen on {listen}")
    server.start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m taas_controlplane.cluster.katib.gate")
    parser.add_argument("--listen", required=True, help="HOST:PORT pods reach")
    parser.add_argument("--upstream", required=True, help="db-manager's HOST:PORT (loopback)")
    parser.add_argument("--kubeconfig", required=True, help="a user who may list pods, get trials")
    parser.add_argument("--host-address", action="append", default=[], help="the host's own")
    args = parser.parse_args(argv)
    gate = Gate(Pods(Connection.load(args.kubeconfig)), set(args.host_address))
    try:
        server = serve(args.listen, args.upstream, gate)
    except OSError as err:
        print(f"katib gate: {err}", file=sys.stderr)
        return 1
    print(f"katib gate: {args.listen} -> {args.upstream}", flush=True)
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
