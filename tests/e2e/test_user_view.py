"""What a user sees on a real cluster (issue 24), through the chart's operator, real TensorFlow
in the trainer image, and kubectl:

- progress from the first seconds to the last: a job of about 15 s shows PROGRESS in `kubectl
  get tfjob` while it runs, and 100% after its chief ended, read from the chief's termination
  message (its progress server is gone by then); its TensorBoard (annotation
  `taas.dev/tensorboard: "true"`) serves the chief's scalars through `taas tensorboard JOB`;
- replicas that stop when asked: a running job deleted with kubectl has no pod left within 5 s
  (graph mode here; TF2 ParameterServerStrategy in the next test), each ended by SIGTERM, not
  killed at the end of its grace period;
- a job applied again at once, while the old pods terminate, never reaches them (its services
  never list an old pod's address), waits for their names, and Succeeds with no recreation and
  no restart;
- a plain TensorFlow program that ignores SIGTERM still ends by its grace period, as anywhere
  on Kubernetes.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_controlplane.cluster.cluster import Cluster
from taas_operator.processes import spawn, stop
from tests.e2e.tensorboard_helpers import served_tensorboard
from tests.harness.real_cluster import (
    JOB_LABEL,
    REPO,
    condition,
    get_json,
    wait_finished,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node, pytest.mark.tensorflow]

UID_LABEL = "taas.dev/job-uid"


def _example(path: str, name: str) -> dict[str, Any]:
    doc = yaml.safe_load((REPO / path).read_text())
    doc["metadata"]["name"] = name
    return dict(doc)


def _containers(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for spec in doc["spec"]["tfReplicaSpecs"].values():
        yield from spec["template"]["spec"]["containers"]


def _set_env(doc: dict[str, Any], **values: str) -> None:
    for container in _containers(doc):
        env = {e["name"]: e for e in container.get("env") or []}
        env.update({k: {"name": k, "value": v} for k, v in values.items()})
        container["env"] = list(env.values())


def _apply(cluster: Cluster, ns: str, doc: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(doc))


def _pods(cluster: Cluster, ns: str, selector: str) -> list[dict[str, Any]]:
    return list(get_json(cluster, "-n", ns, "pods", "-l", selector)["items"])


def _uid(cluster: Cluster, ns: str, name: str) -> str:
    return str(get_json(cluster, "-n", ns, "tfjob", name)["metadata"]["uid"])


def _all_running(cluster: Cluster, ns: str, name: str, count: int) -> bool:
    pods = _pods(cluster, ns, f"{JOB_LABEL}={name}")
    return len(pods) == count and all(p["status"].get("phase") == "Running" for p in pods)


def _training(cluster: Cluster, ns: str, chief: str) -> bool:
    """The chief's log shows its first step (so every replica is up and serving)."""
    log = cluster.kubectl("logs", "-n", ns, chief, check=False).stdout
    return "first step done" in log or bool(re.search(r"\] step \d+", log))


class PodWatch:
    """`kubectl get pods -w` of a label selector, in a thread: every version of every pod."""

    def __init__(self, cluster: Cluster, ns: str, selector: str) -> None:
        argv = [
            "kubectl", "--kubeconfig", cluster.kubeconfig, "get", "pods", "-n", ns, "-l",
            selector, "-w", "--output-watch-events", "-o", "json",
        ]  # fmt: skip
        self.proc = spawn(argv, stderr=subprocess.DEVNULL)
        self.events: list[tuple[float, str, dict[str, Any]]] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        decoder, pending = json.JSONDecoder(), ""
        for raw in iter(lambda: self.proc.stdout.read1(65536), b""):  # type: ignore[union-attr]
            pending += raw.decode(errors="replace")
            while True:
                pending = pending.lstrip()
                try:
                    event, end = decoder.raw_decode(pending)
                except json.JSONDecodeError:
                    break
                pending = pending[end:]
                self.events.append((time.monotonic(), event["type"], event["object"]))

    def exit_codes(self, uid_label: str) -> dict[str, int]:
        """The tensorflow container's exit code of each pod of the incarnation, as last seen."""
        codes = {}
        for _, _, pod in self.events:
            if pod["metadata"].get("labels", {}).get(UID_LABEL) != uid_label:
                continue
            for status in pod["status"].get("containerStatuses") or []:
                ended = (status.get("state") or {}).get("terminated")
                if ended:
                    codes[pod["metadata"]["name"]] = int(ended["exitCode"])
        return codes

    def summary(self, uid_label: str) -> str:
        """For a failure's message: each pod's container end and when the pod went."""
        seen: dict[str, str] = {}
        start = self.events[0][0] if self.events else 0.0
        for when, kind, pod in self.events:
            if pod["metadata"].get("labels", {}).get(UID_LABEL) != uid_label:
                continue
            states = [s.get("state") for s in pod["status"].get("containerStatuses") or []]
            seen[pod["metadata"]["name"]] = (
                f"{kind} at +{when - start:.1f}s, deletionTimestamp "
                f"{pod['metadata'].get('deletionTimestamp')}, states {states}"
            )
        return "\n".join(f"{name}: {line}" for name, line in sorted(seen.items()))

    def close(self) -> None:
        stop(self.proc, signal.SIGKILL, grace=0)
        self._thread.join(5)


def _why(cluster: Cluster, ns: str, name: str) -> str:
    """The job's conditions and its pods' last log lines, for a failure's message."""
    job = get_json(cluster, "-n", ns, "tfjob", name)
    lines = [f"{c['type']}={c['status']}: {c.get('message', '')}"
             for c in (job.get("status") or {}).get("conditions") or []]  # fmt: skip
    for pod in _pods(cluster, ns, f"{JOB_LABEL}={name}"):
        log = cluster.kubectl("logs", "-n", ns, pod["metadata"]["name"], check=False).stdout
        lines.append(f"--- {pod['metadata']['name']}:\n" + "\n".join(log.splitlines()[-25:]))
    return "\n".join(lines)


def _delete_and_time(cluster: Cluster, ns: str, name: str, uid: str) -> float:
    """`kubectl delete tfjob` (not waiting); seconds until no pod of incarnation `uid` is left."""
    started = time.monotonic()
    cluster.kubectl("delete", "-n", ns, "tfjob", name, "--wait=false")
    wait(
        lambda: not _pods(cluster, ns, f"{UID_LABEL}={uid}"),
        f"every pod of {name} ({uid}) gone",
        timeout=60,
        every=0.2,
    )
    return time.monotonic() - started


# -- progress and TensorBoard --------------------------------------------------------------------


def _printed_progress(cluster: Cluster, ns: str, name: str) -> str:
    """The PROGRESS column of `kubectl get tfjob` ("" while it has none)."""
    header, row = cluster.kubectl("get", "-n", ns, "tfjob", name).stdout.splitlines()[:2]
    start = header.index("PROGRESS")  # columns are aligned under their headers
    following = re.search(r"\s\S", header[start:])
    end = start + following.start() + 1 if following else len(row)
    return row[start:end].strip()


def test_progress_while_it_runs_100_percent_after_and_its_tensorboard(
    cluster: Cluster, operator: str, trainer_image: str, ns: str, tmp_path: Path
) -> None:
    name = f"progress-{uuid.uuid4().hex[:6]}"
    shared = cluster.directory / "shared" / name
    shared.mkdir(parents=True)
    shared.chmod(0o777)  # the trainer runs as uid 1000
    doc = _example("examples/keras_digits/mwms.yaml", name)
    doc["spec"]["tfReplicaSpecs"].pop("Evaluator", None)
    worker = doc["spec"]["tfReplicaSpecs"]["Worker"]
    worker["replicas"] = 1  # one process: about 15 s of training on this machine
    pod = worker["template"]["spec"]
    pod["volumes"] = [{"name": "model", "hostPath": {"path": str(shared), "type": "Directory"}}]
    pod["containers"][0]["volumeMounts"] = [{"name": "model", "mountPath": "/model"}]
    _set_env(doc, TF_MAX_STEPS="3000", TF_LOGDIR="/model/run", TAAS_LOG_EVERY_STEPS="500",
             TAAS_SAVE_SUMMARIES_STEPS="100")  # fmt: skip
    doc["metadata"]["annotations"] = {"taas.dev/tensorboard": "true"}
    _apply(cluster, ns, doc)
    chief = f"{name}-worker-0"

    seen: list[str] = []

    def finished() -> dict[str, Any] | None:
        job = get_json(cluster, "-n", ns, "tfjob", name)
        if (condition(job, "Running") or {}).get("status") == "True":
            printed = _printed_progress(cluster, ns, name)
            if printed:
                seen.append(printed)
        done = [c for c in ("Succeeded", "Failed") if (condition(job, c) or {}).get("status")
                == "True"]  # fmt: skip
        return job if done else None

    job = wait(finished, f"TFJob {name} to finish", timeout=600, every=1.0)
    assert (condition(job, "Succeeded") or {}).get("status") == "True", _why(cluster, ns, name)
    running = [p for p in seen if p != "100%"]
    assert running, f"no PROGRESS shown while it ran (seen: {seen})"
    # After the end: 100%, the chief's last report, which it left in its termination message.
    progress = job["status"]["progress"]
    assert progress["percent"] == 100 and progress["step"] == 3000, progress
    assert _printed_progress(cluster, ns, name) == "100%"
    terminated = get_json(cluster, "-n", ns, "pod", chief)["status"]["containerStatuses"][0]
    report = json.loads(terminated["state"]["terminated"]["message"])
    assert report["globalStep"] == 3000 and report["maxSteps"] == 3000, report

    # Its TensorBoard, served here through the apiserver, has the chief's scalars.
    said = tmp_path / "tensorboard.stderr"
    with served_tensorboard(cluster, ns, name, said, lambda: _board_state(cluster, ns)) as fetch:
        page = fetch("").decode()  # its page loads what it needs
        assert 'src="index.js' in page and "/api/v1/" not in page, page[-500:]  # by relative URLs
        tags = json.loads(fetch("data/plugin/scalars/tags"))
        assert "loss" in tags["."], tags
        query = urllib.parse.urlencode({"run": ".", "tag": "loss"})

        # TensorBoard reads the event files again every 5 s (--reload_interval=5): the job's last
        # summaries show up within a reload or two after it finished.
        def last_step() -> int:
            points = json.loads(fetch(f"data/plugin/scalars/scalars?{query}"))
            return max(step for _, step, _ in points)

        wait(
            lambda: last_step() >= 2900,
            "TensorBoard's loss to reach step 2900",
            timeout=60,
            every=1.0,
        )


def _board_state(cluster: Cluster, ns: str) -> str:
    """For a failure's message: the TensorBoard pods, their endpoints and their logs' ends."""
    lines = []
    for pod in _pods(cluster, ns, "taas.dev/tensorboard-for"):
        pod_name = pod["metadata"]["name"]
        statuses = pod["status"].get("containerStatuses") or []
        lines.append(f"pod {pod_name} {pod['status'].get('phase')} {pod['status'].get('podIP')} "
                     f"restarts {[s.get('restartCount') for s in statuses]}")  # fmt: skip
        log = cluster.kubectl("logs", "-n", ns, pod_name, check=False).stdout
        lines.append("\n".join(log.splitlines()[-15:]))
    slices = get_json(cluster, "-n", ns, "endpointslices")["items"]
    lines += [f"slice {s['metadata']['name']}: {s.get('endpoints')}" for s in slices]
    return "\n".join(lines)


# -- stopping when asked -------------------------------------------------------------------------


def test_a_deleted_graph_mode_job_stops_within_5_seconds(
    cluster: Cluster, operator: str, trainer_image: str, ns: str
) -> None:
    name = f"graph-{uuid.uuid4().hex[:6]}"
    doc = _example("examples/linear_regression/tfjob.yaml", name)
    _set_env(doc, TF_MAX_STEPS="1000000")  # runs until deleted
    _apply(cluster, ns, doc)
    wait(
        lambda: _all_running(cluster, ns, name, 3),
        "1 PS + 2 workers running",
        timeout=300,
        every=1.0,
    )
    wait(lambda: _training(cluster, ns, f"{name}-worker-0"), "training", timeout=300, every=1.0)
    uid = _uid(cluster, ns, name)
    watch = PodWatch(cluster, ns, f"{UID_LABEL}={uid}")
    try:
        time.sleep(1)  # the watch has listed
        seconds = _delete_and_time(cluster, ns, name, uid)
        codes = watch.exit_codes(uid)
    finally:
        watch.close()
    assert seconds <= 5, f"pods took {seconds:.1f}s to go:\n{watch.summary(uid)}"
    # Ended by SIGTERM (143; a PS whose work is done, 0), never SIGKILLed (137)
    assert codes and all(code in (0, 143) for code in codes.values()), codes


def _endpoint_ips(cluster: Cluster, ns: str, name: str) -> set[str]:
    slices = get_json(cluster, "-n", ns, "endpointslices", "-l", f"{JOB_LABEL}={name}")
    return {
        address
        for item in slices["items"]
        for endpoint in item.get("endpoints") or []
        for address in endpoint.get("addresses") or []
    }


def test_a_pss_job_applied_again_at_once_never_reaches_the_old_pods_and_succeeds(
    cluster: Cluster, operator: str, trainer_image: str, ns: str
) -> None:
    name = f"again-{uuid.uuid4().hex[:6]}"
    doc = _example("examples/keras_digits/pss.yaml", name)
    _set_env(doc, TF_MAX_STEPS="20000")  # still training when deleted
    _apply(cluster, ns, doc)
    wait(
        lambda: _all_running(cluster, ns, name, 4),
        "chief, PS, 2 workers running",
        timeout=300,
        every=1.0,
    )
    wait(lambda: _training(cluster, ns, f"{name}-chief-0"), "training", timeout=300, every=1.0)
    old_uid = _uid(cluster, ns, name)
    old_ips = {p["status"]["podIP"] for p in _pods(cluster, ns, f"{UID_LABEL}={old_uid}")}
    watch = PodWatch(cluster, ns, f"{JOB_LABEL}={name}")
    try:
        time.sleep(1)
        started = time.monotonic()
        cluster.kubectl("delete", "-n", ns, "tfjob", name, "--wait=false")
        _set_env(doc, TF_MAX_STEPS="300")
        _apply(cluster, ns, doc)  # at once: the old pods are terminating
        new_uid = wait(
            lambda: _uid(cluster, ns, name) != old_uid and _uid(cluster, ns, name),
            "the new TFJob",
            timeout=120.0,
            every=1.0,
        )
        listed: set[str] = set()

        def old_gone() -> bool:
            listed.update(_endpoint_ips(cluster, ns, name))
            return not _pods(cluster, ns, f"{UID_LABEL}={old_uid}")

        wait(old_gone, "the old pods gone", timeout=60, every=0.2)
        seconds = time.monotonic() - started
        job = wait_finished(cluster, ns, name, timeout=600)
        listed.update(_endpoint_ips(cluster, ns, name))
        old_codes = watch.exit_codes(old_uid)
        timeline = f"old pods:\n{watch.summary(old_uid)}\nnew pods:\n{watch.summary(new_uid)}"
    finally:
        watch.close()
    assert seconds <= 5, f"the old pods took {seconds:.1f}s to go:\n{watch.summary(old_uid)}"
    assert old_codes and all(code in (0, 143) for code in old_codes.values()), old_codes
    assert not listed & old_ips, f"the new job's services listed old pods: {listed & old_ips}"
    assert (condition(job, "Succeeded") or {}).get("status") == "True", _why(cluster, ns, name)
    assert job["metadata"]["uid"] == new_uid
    assert not job["status"].get("recreations"), job["status"]["recreations"]
    for pod in _pods(cluster, ns, f"{UID_LABEL}={new_uid}"):
        restarts = [s["restartCount"] for s in pod["status"].get("containerStatuses") or []]
        assert restarts == [0], (pod["metadata"]["name"], restarts)
    log = cluster.kubectl("logs", "-n", ns, f"{name}-chief-0").stdout
    assert "test accuracy" in log, log[-2000:]
    # It said why its pods came a few seconds late: the old ones still held their names.
    events = get_json(cluster, "-n", ns, "events", "--field-selector",
                      f"involvedObject.uid={new_uid},reason=WaitingForOldPods")  # fmt: skip
    said = cluster.kubectl("logs", "-n", operator, "-l", "app.kubernetes.io/name=taas",
                           "--tail=-1", check=False).stdout  # fmt: skip
    about = "\n".join(line for line in said.splitlines() if name in line)
    assert events["items"], f"no WaitingForOldPods event on the new TFJob\n{timeline}\n{about}"
    assert "of an earlier TFJob of the same name to terminate" in events["items"][0]["message"]


def test_a_plain_tf_program_ignoring_sigterm_ends_by_its_grace_period(
    cluster: Cluster, operator: str, trainer_image: str, ns: str
) -> None:
    name = f"stubborn-{uuid.uuid4().hex[:6]}"
    program = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "import tensorflow as tf\n"
        "print('serving', tf.__version__, flush=True)\n"
        "time.sleep(3600)\n"
    )
    doc = _example("examples/mnist/async.yaml", name)
    for spec in doc["spec"]["tfReplicaSpecs"].values():
        spec["template"]["spec"]["terminationGracePeriodSeconds"] = 4
        spec["template"]["spec"]["containers"][0]["command"] = ["python", "-c", program]
    del doc["spec"]["tfReplicaSpecs"]["PS"]
    doc["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 1
    _apply(cluster, ns, doc)
    pod = f"{name}-worker-0"
    wait(
        lambda: "serving" in cluster.kubectl("logs", "-n", ns, pod, check=False).stdout,
        "the program up",
        timeout=300,
        every=1.0,
    )
    uid = _uid(cluster, ns, name)
    watch = PodWatch(cluster, ns, f"{UID_LABEL}={uid}")
    try:
        time.sleep(1)
        seconds = _delete_and_time(cluster, ns, name, uid)
        codes = watch.exit_codes(uid)
    finally:
        watch.close()
    assert codes == {pod: 137}, codes  # killed at the end of its grace period
    assert 4 <= seconds <= 15, f"{seconds:.1f}s for a grace period of 4 s"
