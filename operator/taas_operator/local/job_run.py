"""One TFJob under `taas run`: its local pods, its status, and the plan loop.

    JobRun(job, display)               # one free 127.0.0.1 port per replica
        .preflight()                   # InputError when a pod cannot start here; warnings
        .network                       # a local.netns.PrivateNetwork its pods start in, or None
        .step(now) -> bool             # poll pods, plan and act when needed; True: table changed
        .stop(now)  .kill()  .alive  .done  .skipped
        .table_rows() -> list[list[str]]  .job_row() -> list[str]
        .progress                      # local.progress_file.ProgressFile: the chief's progress

`BuildOptions(hosts=...)` points every replica at `127.0.0.1:<its port>`, so TF_CONFIG and
PS_HOSTS/WORKER_HOSTS/... come from the operator's own builder; with a `network` (the runner's
default) that 127.0.0.1 is the job's own loopback, shared by its replicas only. `step`:
1. the local kubelet polls its pods (exits, in-place restarts, grace periods);
2. when something changed, or the planner asked to be called again (`requeue_at`: deadline),
   `sync` asks `plan_job(job, observed pods, now)` for a Plan and carries it out like the
   operator does: status first, then delete pods (stop processes) and create pods (start
   processes), then the events are printed; `services=None`: there are no services locally;
3. the job is done when its status is Succeeded or Failed and no process of it is left.
   With cleanPodPolicy None the replicas it keeps run on until they exit by themselves (a note
   says so; Ctrl-C stops them), as they would in a cluster.
Training progress: the chief (a program using the trainer library) writes it to the job's
`ProgressFile`; a new document makes `sync` fold it into the status with the operator's own
`planner.fold_progress` (at most once a second here), so the job row shows the PROGRESS and ETA
`kubectl get tfjobs` would.
"""

from __future__ import annotations

import sys
from collections import Counter
from datetime import datetime
from typing import Any

from taas_operator.api import ProgressReport, TFJob
from taas_operator.api.constants import DEFAULT_CONTAINER_NAME
from taas_operator.api.state import job_state
from taas_operator.documents import InputError
from taas_operator.local.container import LOCAL_IP, launch_spec
from taas_operator.local.display import RunDisplay
from taas_operator.local.environment import EnvPolicy, base_env
from taas_operator.local.kubelet import LocalPod
from taas_operator.local.netns import PrivateNetwork
from taas_operator.local.progress_file import INTERVAL_S, ProgressFile
from taas_operator.local.unapplied import unapplied
from taas_operator.planner import (
    BuildOptions,
    chief_slot,
    desired_pods,
    fold_progress,
    plan_job,
    progress_columns,
)
from taas_operator.processes import free_ports
from taas_operator.tfjob import replica_name


class JobRun:
    """One TFJob: its local pods, its status, and the plan loop."""

    def __init__(self, job: TFJob, display: RunDisplay, env: EnvPolicy | None = None) -> None:
        self.job, self.display = job, display
        self.base_env = base_env(env or EnvPolicy())  # under each container's env
        slots = [
            (t.lower(), i)
            for t in job.replica_types()
            for i in range(job.spec.tf_replica_specs[t].replicas)
        ]
        try:
            self.ports = dict(zip(slots, free_ports(len(slots)), strict=True))
        except OSError as exc:
            raise InputError(
                f"TFJob {job.name}: cannot reserve {len(slots)} ports for its replicas "
                f"({exc.strerror}); fix: fewer replicas"
            ) from None
        self.network: PrivateNetwork | None = None
        self.options = BuildOptions(hosts=self._host)
        self.pods: dict[str, LocalPod] = {}
        self.ended: dict[str, LocalPod] = {}  # deleted pods, for the table
        self.starts: Counter[str] = Counter()
        self.requeue_at: datetime | None = None
        self.dirty = True
        self.done = False
        self.skipped: str | None = None
        self.waiting_note = False
        self.progress = ProgressFile(chief_slot(job))
        self.report: ProgressReport | None = None

    def _host(self, replica_type: str, index: int, port: int) -> str:
        return f"{LOCAL_IP}:{self.ports[(replica_type, index)]}"

    # -- before anything starts ----------------------------------------------------------------
    def preflight(self) -> None:
        """Check every pod can start here (InputError if not) and print one-line notes: the
        image, what of the pod templates is not applied, a job with no replica at all."""
        images: set[str] = set()
        notes: list[str] = []
        for pod in desired_pods(self.job, self.options):
            launch = launch_spec(pod, self.base_env)
            notes += [n for n in launch.notes if n not in notes]
            for container in pod["spec"]["containers"]:
                if container.get("name") == DEFAULT_CONTAINER_NAME and container.get("image"):
                    images.add(str(container["image"]))
        if images:
            self.display.note(
                f"image {', '.join(sorted(images))} not pulled: commands run in this Python "
                f"environment ({sys.executable})"
            )
        for note in notes:
            self.display.note(note)
        skipped = unapplied(self.job)
        if skipped:
            self.display.warn(skipped)
        if not self.ports:
            self.display.warn(
                f"TFJob {self.job.name} has no replicas (replicas is 0 for every type): it "
                f"succeeds at once without running anything, as Kubeflow's operator does; fix: "
                f"set replicas to 1 or more"
            )

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
        report = self.progress.read()
        if report is not None:
            self.report = report
        if not self.done and (changed or self.dirty or due or report is not None):
            self.sync(now)
            changed = True
        return changed

    def sync(self, now: datetime) -> None:
        """Plan with the planner and carry the plan out, as the operator's pass does."""
        plan = plan_job(
            self.job, [p.observed() for p in self.pods.values()], now, options=self.options
        )
        if plan.skipped:
            self.skipped = plan.skipped
            self.display.note(f"TFJob {self.job.name} not run: {plan.skipped}")
            self.stop(now)
            self.done = True
            return
        fold_progress(self.job, plan, self.report, now, interval=INTERVAL_S)
        if plan.status_changed:
            self.job = self.job.model_copy(update={"status": plan.status})
        for name in plan.delete_pods:
            if name in self.pods:
                self.pods[name].delete(now)
        for manifest in plan.create_pods:
            self.start(manifest)
        for event in plan.events:
            self.display.event(self.job, event)
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
        """Nothing runs and the planner plans nothing more: end instead of waiting for ever."""
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
            for pod in leftovers:  # not expected: the planner deletes active pods itself
                pod.delete(now)
        self.done = not any(p.alive for p in self.pods.values())

    def start(self, manifest: dict[str, Any]) -> None:
        """Start a pod the plan asked for; a new uid per start (recreations count per uid)."""
        name = manifest["metadata"]["name"]
        self.starts[name] += 1
        launch = launch_spec(manifest, self.base_env)
        launch.env.update(self.progress.env(manifest))
        pod = LocalPod(
            manifest,
            f"{name}-{self.starts[name]}",
            launch,
            lambda pod_name, raw: self.display.line(self.job.name, pod_name, raw),
            namespaces=self.network.fds if self.network else (),
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
    def job_row(self) -> list[str]:
        """TFJOB, STATE, PROGRESS, ETA (as `kubectl get tfjobs` shows them) and the message
        of the latest true condition."""
        status = self.job.status
        progress, eta = progress_columns(status)
        true = [c for c in status.conditions if c.status == "True"]
        message = true[-1].message if true else ""
        return [self.job.name, job_state(status).shown, progress, eta, message]

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
