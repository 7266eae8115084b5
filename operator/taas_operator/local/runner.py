"""`taas run`: drive TFJobs on this machine with the operator's own engine.

    RunOptions(logs_dir=None, color=True, table=True)
    run_jobs(jobs: Sequence[TFJob], options: RunOptions) -> int     # the exit code

For each job, a `JobRun` gives every replica a free port on 127.0.0.1 and passes
`BuildOptions(hosts=...)` to the engine, so TF_CONFIG and PS_HOSTS/WORKER_HOSTS/... come from
the operator's own builder. The loop (every 0.1 s, main thread only):

1. the local kubelet polls its pods (exits, in-place restarts, grace periods);
2. when something changed, or the engine asked to be called again (`requeue_at`: deadline),
   `reconcile(job, observed pods, now)` gives a Plan, carried out like the operator does:
   status first, then delete pods (stop processes) and create pods (start processes), then the
   events are printed; `services=None`: there are no services locally;
3. a job is over when its status is Succeeded or Failed and no process of it is left.
   With cleanPodPolicy None the replicas it keeps run on until they exit by themselves (a note
   says so; Ctrl-C stops them), as they would in a cluster.

SIGINT, SIGTERM and SIGHUP stop every replica (SIGTERM, then SIGKILL after the grace period;
a second signal kills at once) and the run ends as "stopped" with 128 + the signal number
(a job that had already finished keeps its own exit code).
Exit codes: 0 every job Succeeded, 1 one Failed, 2 input error (before anything starts).
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import yaml
from pydantic import BaseModel

from taas_operator.api import TFJob
from taas_operator.api.constants import DEFAULT_CONTAINER_NAME
from taas_operator.engine import BuildOptions, desired_pods, reconcile
from taas_operator.local.container import LOCAL_IP, launch_spec
from taas_operator.local.display import Display, format_table
from taas_operator.local.kubelet import LocalPod
from taas_operator.local.process import free_ports
from taas_operator.tfjob import replica_name

TICK_SECONDS = 0.1
EXIT_SUCCEEDED, EXIT_FAILED = 0, 1
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class RunOptions(BaseModel):
    """How `taas run` shows things."""

    logs_dir: str | None = None
    color: bool = True
    table: bool = True


class JobRun:
    """One TFJob: its local pods, its status, and the plan loop."""

    def __init__(self, job: TFJob, display: Display) -> None:
        self.job, self.display = job, display
        slots = [
            (t.lower(), i)
            for t in job.replica_types()
            for i in range(job.spec.tf_replica_specs[t].replicas)
        ]
        self.ports = dict(zip(slots, free_ports(len(slots)), strict=True))
        self.options = BuildOptions(hosts=self._host)
        self.pods: dict[str, LocalPod] = {}
        self.ended: dict[str, LocalPod] = {}  # deleted pods, for the table
        self.starts: Counter[str] = Counter()
        self.requeue_at: datetime | None = None
        self.dirty = True
        self.done = False
        self.skipped: str | None = None
        self.waiting_note = False

    def _host(self, replica_type: str, index: int, port: int) -> str:
        return f"{LOCAL_IP}:{self.ports[(replica_type, index)]}"

    # -- before anything starts ----------------------------------------------------------------
    def preflight(self) -> None:
        """Check every pod can start here (InputError if not) and print one-line notes."""
        images: set[str] = set()
        notes: list[str] = []
        for pod in desired_pods(self.job, self.options):
            launch = launch_spec(pod)
            notes += [n for n in launch.notes if n not in notes]
            for container in pod["spec"]["containers"]:
                if container.get("name") == DEFAULT_CONTAINER_NAME and container.get("image"):
                    images.add(str(container["image"]))
                elif container.get("name") != DEFAULT_CONTAINER_NAME:
                    notes.append(
                        f"pod {pod['metadata']['name']}: container {container.get('name')} "
                        f"is not run locally (only {DEFAULT_CONTAINER_NAME} is)"
                    )
        if images:
            self.display.note(
                f"image {', '.join(sorted(images))} not pulled: commands run in this Python "
                f"environment ({sys.executable})"
            )
        for note in notes:
            self.display.note(note)

    # -- the loop ------------------------------------------------------------------------------
    def step(self, now: datetime) -> bool:
        """Poll the pods, reconcile when needed; True when the table may have changed."""
        changed = False
        for pod in list(self.pods.values()):
            changed |= pod.poll(now)
            if pod.gone:
                pod.kill()
                pod.flush_logs()
                pod.poll(now)  # records how a stopped process ended
                self.ended[pod.name] = self.pods.pop(pod.name)
                changed = True
        due = self.requeue_at is not None and now >= self.requeue_at
        if not self.done and (changed or self.dirty or due):
            self.reconcile(now)
            changed = True
        return changed

    def reconcile(self, now: datetime) -> None:
        """One engine pass, carried out."""
        plan = reconcile(
            self.job, [p.observed() for p in self.pods.values()], now, options=self.options
        )
        if plan.skipped:
            self.skipped = plan.skipped
            self.display.note(f"TFJob {self.job.name} not run: {plan.skipped}")
            self.stop(now)
            self.done = True
            return
        if plan.status_changed:
            self.job = self.job.model_copy(update={"status": plan.status})
        for name in plan.delete_pods:
            if name in self.pods:
                self.pods[name].delete(now)
        for manifest in plan.create_pods:
            self.start(manifest)
        for event in plan.events:
            self.display.note(f"{event.type} {event.reason}: {event.message}")
        self.requeue_at = plan.requeue_at
        self.dirty = bool(plan.status_changed or plan.create_pods or plan.delete_pods)
        if self.job.status.finished:
            self.finish_leftovers(now)
        elif not self.dirty and plan.requeue_at is None and not self.busy:
            self.stall()

    @property
    def busy(self) -> bool:
        """Some pod runs, waits to restart, or is being deleted."""
        return any(p.alive or p.restart_at or p.deleting_since for p in self.pods.values())

    def stall(self) -> None:
        """Nothing runs and the engine plans nothing more: end instead of waiting for ever."""
        if self.job.status.is_true("Suspended"):
            self.skipped = "spec.runPolicy.suspend is true (set it to false to run the job)"
        else:
            self.skipped = (
                "no replica is running and nothing more will start, so the job cannot finish "
                "(a TFJob succeeds when its Chief/Master, or else Worker 0, succeeds)"
            )
        self.display.note(f"TFJob {self.job.name}: {self.skipped}")
        self.done = True

    def finish_leftovers(self, now: datetime) -> None:
        """After Succeeded/Failed: wait for replicas cleanPodPolicy keeps, else stop them."""
        leftovers = [p for p in self.pods.values() if p.alive and not p.deleting_since]
        policy = self.job.spec.run_policy.clean_pod_policy
        if leftovers and policy == "None" and not self.waiting_note:
            self.waiting_note = True
            self.display.note(
                f"cleanPodPolicy None keeps {', '.join(p.name for p in leftovers)} running, as "
                f"the operator would: waiting for {'it' if len(leftovers) == 1 else 'them'} to "
                f"exit (Ctrl-C stops them)"
            )
        elif leftovers and policy != "None":
            for pod in leftovers:  # not expected: the engine deletes active pods itself
                pod.delete(now)
        self.done = not any(p.alive for p in self.pods.values())

    def start(self, manifest: dict[str, Any]) -> None:
        """Start a pod the plan asked for; a new uid per start (recreations count per uid)."""
        name = manifest["metadata"]["name"]
        self.starts[name] += 1
        pod = LocalPod(
            manifest,
            f"{name}-{self.starts[name]}",
            launch_spec(manifest),
            lambda pod_name, raw: self.display.line(self.job.name, pod_name, raw),
        )
        self.pods[name] = pod
        pod.start()

    def stop(self, now: datetime) -> None:
        """Begin stopping every pod (SIGTERM, SIGKILL after the grace period)."""
        for pod in self.pods.values():
            pod.delete(now)

    def kill(self) -> None:
        """SIGKILL every pod at once."""
        for pod in self.pods.values():
            pod.kill()

    @property
    def alive(self) -> bool:
        """Some process of this job still runs."""
        return any(p.alive for p in self.pods.values())

    # -- output --------------------------------------------------------------------------------
    def condition(self) -> str:
        """The latest true condition, e.g. `Running`, with its message."""
        true = [c for c in self.job.status.conditions if c.status == "True"]
        if not true:
            return "Pending"
        last = true[-1]
        return f"{last.type}: {last.message}"

    def table_rows(self) -> list[list[str]]:
        """One row per replica slot."""
        rows = []
        for (rtype, index), port in self.ports.items():
            name = replica_name(self.job.name, rtype, index)
            pod = self.pods.get(name) or self.ended.get(name)
            recreations = self.job.status.recreations.get(name)
            restarts = (pod.restart_count if pod else 0) + (recreations.count if recreations else 0)
            code = pod.exit_code if pod else None
            rows.append(
                [
                    f"{self.job.name}/{rtype}-{index}",
                    pod.state() if pod else "-",
                    str(restarts),
                    "" if code is None else str(code),
                    str(pod.pid or "") if pod else "",
                    f"{LOCAL_IP}:{port}",
                ]
            )
        return rows


def _table(runs: Sequence[JobRun]) -> list[str]:
    header = ["REPLICA", "STATE", "RESTARTS", "EXIT", "PID", "ADDRESS"]
    lines = format_table(header, [row for run in runs for row in run.table_rows()])
    lines += [f"TFJob {run.job.name}: {run.condition()}" for run in runs]
    return lines


@contextlib.contextmanager
def _stop_signals() -> Iterator[list[int]]:
    """Collect SIGINT/SIGTERM/SIGHUP numbers in a list instead of dying."""
    received: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = {s: signal.signal(s, handler) for s in _STOP_SIGNALS}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _report(runs: Sequence[JobRun], stopped: int | None) -> str:
    out = ["", *_table(runs), ""]
    for run in runs:
        status = {"status": run.job.status.to_dict()}
        out.append(f"# TFJob {run.job.namespace}/{run.job.name}, as the operator writes it:")
        out.append(yaml.safe_dump(status, sort_keys=False).rstrip())
    out.append("")
    for run in runs:
        st = run.job.status
        if stopped is not None and not st.finished:
            verdict = f"stopped by {signal.Signals(stopped).name} before it finished"
        elif st.is_true("Succeeded"):
            verdict = "Succeeded"
        elif st.is_true("Failed"):
            verdict = f"Failed: {st.condition('Failed').message}"  # type: ignore[union-attr]
        else:
            verdict = f"not run: {run.skipped}" if run.skipped else "unfinished"
        out.append(f"TFJob {run.job.name} {verdict}")
    return "\n".join(out) + "\n"


def _exit_code(runs: Sequence[JobRun], stopped: int | None) -> int:
    if stopped is not None and not all(r.job.status.finished for r in runs):
        return 128 + stopped
    if all(r.job.status.is_true("Succeeded") for r in runs):
        return EXIT_SUCCEEDED
    return EXIT_FAILED


def run_jobs(jobs: Sequence[TFJob], options: RunOptions, stream: Any = None) -> int:
    """Run `jobs` to completion (or until stopped); return the exit code."""
    out = stream or sys.stdout
    live = options.table and out.isatty()
    display = Display(
        out,
        color=options.color and out.isatty(),
        live=live,
        logs_dir=options.logs_dir,
        prefix_job=len(jobs) > 1,
    )
    runs = [JobRun(job, display) for job in jobs]
    for run in runs:
        run.preflight()  # InputError here: nothing has started yet
    width = shutil.get_terminal_size().columns
    stopped: int | None = None
    try:
        with _stop_signals() as received:
            while not all(r.done for r in runs) and not received:
                now = datetime.now(UTC)
                changed = [run.step(now) for run in runs]
                if options.table and any(changed):
                    lines = _table(runs)
                    display.table([line[:width] for line in lines] if live else lines)
                time.sleep(TICK_SECONDS)
            if received:
                stopped = received[0]
                display.note(f"{signal.Signals(stopped).name}: stopping every replica")
                now = datetime.now(UTC)
                for run in runs:
                    run.stop(now)
                while any(r.alive for r in runs) and len(received) < 2:
                    for run in runs:
                        _poll_only(run)
                    time.sleep(TICK_SECONDS)
    finally:
        for run in runs:
            run.kill()
            _poll_only(run)
            for pod in run.pods.values():
                pod.flush_logs(timeout=1.0)
        display.final(_report(runs, stopped))
        display.close()
    return _exit_code(runs, stopped)


def _poll_only(run: JobRun) -> None:
    """Let pods being deleted reach their grace deadline, without reconciling."""
    now = datetime.now(UTC)
    for pod in run.pods.values():
        pod.poll(now)
