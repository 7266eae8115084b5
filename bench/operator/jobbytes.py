"""`python -m bench.operator.jobbytes`: what one TFJob puts into etcd, TaaS beside
training-operator (issue 39).

    python -m bench.operator.jobbytes                        # 100, 1,000 and 5,000 replicas
    python -m bench.operator.jobbytes --replicas 5000 --cap 200 --json out.json

For each size and controller, on a fresh control plane (`measure.staged`): one TFJob of N
workers (the same manifest for both controllers) in a namespace whose ResourceQuota admits at
most `--cap` pods and `--cap` services (no quota controller runs: its status is written by hand,
admission counts from it), so a big job's pods are measured without filling etcd. Once the
objects are made (and the controller quiet), etcd itself is read (its JSON gateway on loopback,
paged): the bytes of every value under the namespace, as the apiserver stores them (protobuf for
pods and services, JSON for the TFJob), by kind. Figures: bytes per pod and per service (the
mean over those made), and per job: pods + services, the made ones' mean times N where the cap
stopped them. training-operator makes a job's services only once all its pods exist, so under
the cap it makes none and its row has no service or job figure (a service's bytes hardly
depend on N: take them from a smaller size). Objects no controller makes here are left out
(Endpoints: no controller-manager runs); the events and the TFJob itself are shown apart.

TaaS runs with its byte budget off (`TAAS_MAX_JOB_BYTES=0`), so its pods can be measured at
every size; with the default budget (256 MiB) its 5,000-replica job is refused before any pod is
made.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

from kubernetes import client
from pydantic import BaseModel

from bench.harness.controllers import CONTROLLERS, Controller, TaasController
from bench.harness.procstats import settle
from bench.harness.table import figure, ratio
from bench.harness.workloads import tfjob_manifest
from bench.operator.measure import NAMESPACE, staged

QUOTA = "objects"
PODS, SERVICES = "pods", "services/specs"  # their paths in etcd
QUOTA_KIND = "resourcequotas"  # the bench's own
#: Seconds without a new object after the pods are made: the run is over.
STALLED_S = 30.0
#: etcd values read per page (a 5,000-replica job's pods are about 0.4-0.7 MB each).
PAGE = 20
#: The contestants: TaaS without its byte budget, and training-operator v1.8.1.
BYTES_CONTROLLERS: dict[str, Controller] = {
    "taas": TaasController("taas", "TaaS", {"TAAS_MAX_JOB_BYTES": "0"}),
    "kubeflow": CONTROLLERS["kubeflow"],
}


class KindBytes(BaseModel):
    """Objects of one kind in the namespace and their stored bytes."""

    count: int = 0
    bytes: int = 0

    @property
    def mean(self) -> float | None:
        return self.bytes / self.count if self.count else None


class JobBytesResult(BaseModel):
    """One controller, one job size."""

    controller: str
    replicas: int
    cap: int
    kinds: dict[str, KindBytes] = {}
    seconds: float | None = None
    broken: str | None = None

    def kind(self, name: str) -> KindBytes:
        return self.kinds.get(name, KindBytes())

    @property
    def job_bytes(self) -> float | None:
        """Pods + services of the whole job (the made ones' mean times the replicas)."""
        pod, service = self.kind(PODS).mean, self.kind(SERVICES).mean
        if pod is None or service is None:
            return None
        return (pod + service) * self.replicas


def etcd_bytes(etcd_url: str, namespace: str) -> dict[str, KindBytes]:
    """kind (etcd's resource path, e.g. `pods`, `services/specs`, `kubeflow.org/tfjobs`) ->
    the count and bytes of its values under `namespace`, read from etcd's JSON gateway."""
    keys = _range(etcd_url, b"/registry/", keys_only=True)
    kinds: dict[str, KindBytes] = defaultdict(KindBytes)
    prefixes = sorted(
        {
            key.rsplit(b"/", 1)[0] + b"/"
            for key, _ in keys
            if key.split(b"/")[-2:-1] == [namespace.encode()]
        }
    )
    for prefix in prefixes:
        kind = prefix.decode().removeprefix("/registry/").removesuffix(f"/{namespace}/")
        for _, value in _range(etcd_url, prefix):
            kinds[kind].count += 1
            kinds[kind].bytes += len(value)
    return dict(kinds)


def _range(url: str, prefix: bytes, keys_only: bool = False) -> list[tuple[bytes, bytes]]:
    """Every (key, value) under `prefix`, in pages (keys only: values empty)."""
    end = prefix[:-1] + bytes([prefix[-1] + 1])
    found: list[tuple[bytes, bytes]] = []
    start = prefix
    while True:
        body = {
            "key": base64.b64encode(start).decode(),
            "range_end": base64.b64encode(end).decode(),
            "limit": 10_000 if keys_only else PAGE,
            "keys_only": keys_only,
        }
        request = urllib.request.Request(
            f"{url}/v3/kv/range", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as answer:
            page = json.loads(answer.read())
        kvs = page.get("kvs") or []
        found += [
            (base64.b64decode(kv["key"]), base64.b64decode(kv.get("value", ""))) for kv in kvs
        ]
        if not page.get("more") or not kvs:
            return found
        start = found[-1][0] + b"\x00"


def _quota(api: client.ApiClient, cap: int) -> None:
    core = client.CoreV1Api(api)
    hard = {"pods": str(cap), "services": str(cap)}
    body = client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name=QUOTA), spec=client.V1ResourceQuotaSpec(hard=hard)
    )
    core.create_namespaced_resource_quota(NAMESPACE, body)
    used = {"status": {"hard": hard, "used": {"pods": "0", "services": "0"}}}
    core.patch_namespaced_resource_quota_status(QUOTA, NAMESPACE, used)


def _made(api: client.ApiClient) -> tuple[int, int]:
    core = client.CoreV1Api(api)
    counts = []
    for listing in (core.list_namespaced_pod, core.list_namespaced_service):
        page = listing(NAMESPACE, limit=1)
        counts.append(len(page.items) + int(page.metadata.remaining_item_count or 0))
    return counts[0], counts[1]


def run_job_bytes(
    controller: Controller, replicas: int, cap: int, workdir: Path, timeout_s: float
) -> JobBytesResult:
    """One TFJob of `replicas` workers, at most `cap` pods and services made; etcd read."""
    result = JobBytesResult(controller=controller.name, replicas=replicas, cap=cap)
    try:
        with staged(controller, workdir) as stage:
            _quota(stage.api, cap)
            job = tfjob_manifest("bytes", NAMESPACE, 0, replicas)
            start = time.monotonic()
            client.CustomObjectsApi(stage.api).create_namespaced_custom_object(
                "kubeflow.org", "v1", NAMESPACE, "tfjobs", job
            )
            wanted = (min(replicas, cap), min(replicas, cap))
            made, last, changed = (0, 0), (-1, -1), time.monotonic()
            while time.monotonic() - start < timeout_s and stage.running.alive():
                made = _made(stage.api)
                if made != last:
                    last, changed = made, time.monotonic()
                # done: everything made, or the pods made and nothing new for STALLED_S (a
                # controller that makes services only after every pod never makes them)
                if made >= wanted or (
                    made[0] >= wanted[0] and time.monotonic() - changed > STALLED_S
                ):
                    break
                time.sleep(1.0)
            result.seconds = round(time.monotonic() - start, 1)
            settle(stage.sampler, stage.running, 30.0)
            etcd = f"http://127.0.0.1:{stage.plane.endpoints.etcd_client}"
            result.kinds = etcd_bytes(etcd, NAMESPACE)
            if made[0] < wanted[0]:
                result.broken = f"timed out: {made[0]} pods, {made[1]} services made"
    except Exception as exc:  # a broken run is reported, the others still run
        result.broken = f"{type(exc).__name__}: {exc}"
    return result


def _kib(value: float | None) -> str:
    return figure(None if value is None else value / 1024)


def table(results: list[JobBytesResult]) -> str:
    """A markdown table: per size, each controller's bytes and TaaS / training-operator."""
    head = (
        "| replicas | controller | pods made | KiB a pod | KiB a service | MiB a job "
        "(pods + services) | events KiB | TFJob KiB | other kinds | job / t-op |"
    )
    lines = [head, "|" + " --- |" * 10]
    baseline = {r.replicas: r for r in results if r.controller == "kubeflow"}
    for r in results:
        base = baseline.get(r.replicas)
        others = sorted(
            set(r.kinds) - {PODS, SERVICES, "events", "kubeflow.org/tfjobs", QUOTA_KIND}
        )
        job = r.job_bytes
        cells = (
            f"{r.replicas:,}",
            r.controller,
            f"{r.kind(PODS).count:,}",
            _kib(r.kind(PODS).mean),
            _kib(r.kind(SERVICES).mean),
            figure(None if job is None else job / 2**20),
            _kib(r.kind("events").bytes),
            _kib(r.kind("kubeflow.org/tfjobs").bytes),
            ", ".join(f"{k} {r.kinds[k].count} ({_kib(r.kinds[k].bytes)} KiB)" for k in others)
            or "-",
            ratio(job, base.job_bytes) if base is not None and base is not r else "-",
        )
        lines.append(
            "| "
            + " | ".join(cells)
            + " |"
            + (f" BROKEN: {r.broken.splitlines()[0]}" if r.broken else "")
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.operator.jobbytes", description=__doc__)
    parser.add_argument("--replicas", default="100,1000,5000", help="job sizes (comma-separated)")
    parser.add_argument("--cap", type=int, default=1000, help="pods and services made, at most")
    parser.add_argument("--controllers", default="taas,kubeflow", help="(default taas,kubeflow)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--workdir", metavar="DIR", help="logs and control planes (default tmp)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    sizes = [int(s) for s in args.replicas.split(",") if s.strip()]
    names = [n.strip() for n in args.controllers.split(",") if n.strip()]
    if not sizes or min(sizes) < 1 or args.cap < 1 or set(names) - set(BYTES_CONTROLLERS):
        parser.error(f"--replicas, --cap: at least 1; --controllers: {','.join(BYTES_CONTROLLERS)}")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-jobbytes-"))
    results = []
    for size in sizes:
        for name in names:
            print(f"[bench] job bytes, {size} replicas: {name} ...", file=sys.stderr, flush=True)
            run_dir = workdir / f"{name}-{size}"
            result = run_job_bytes(BYTES_CONTROLLERS[name], size, args.cap, run_dir, args.timeout)
            print(result.model_dump_json(), flush=True)
            results.append(result)
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps([r.model_dump() for r in results], indent=1))
    return 1 if any(r.broken for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
