"""Cluster coordination on the PS tasks: the start barrier, the "done" signal, PS serving.

How a PS ends cleanly (no ``server.join()`` forever, no kill): every PS hosts a small FIFO queue
``taas_done``. Each trainer task (chief and workers), after its session is closed, enqueues its
task id on every PS. A PS dequeues ids until it has seen every trainer task it knows of, then
exits 0. In the dynamic-worker form a PS knows no workers and waits for the chief's id only.

The TensorFlow 2 engine's ParameterServerStrategy uses the same queue on every PS and worker
task (:func:`serve_until_done`): the coordinator alone signals them (:func:`signal_done_to`).

Sync mode adds a start barrier: each trainer enqueues its id on ``taas_ready`` (PS 0) and waits,
polling fast, until as many ids as replicas are there, so one fast worker cannot fill the first
global steps alone. A restarted task passes at once (the old ids are still there).

A trainer checks that the PS ports answer before it creates a session (TensorFlow would wait
forever); past ``startup_timeout_secs`` it raises :class:`PeerUnreachableError` (exit 138).
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from typing import Any

from taas.core import stopping
from taas.core.exit_codes import PeerUnreachableError
from taas.core.placement import TRAINER_TYPES, ClusterInfo

QUEUE_CAPACITY = 1 << 20
#: The queue a trainer enqueues its id on when it is done (`taas.runtime.lean_server` too).
DONE_QUEUE = "taas_done"
_POLL_SECS = 0.05
#: How long a server stays after its last "done", so that enqueue gets its reply.
LINGER_SECS = 0.5


def task_id(task_type: str, index: int) -> int:
    """A number naming a trainer task in the coordination queues."""
    return (TRAINER_TYPES.index(task_type) + 1) * 1_000_000 + index


def _queue(name: str, ps_index: int, job: str = "ps") -> Any:
    import tensorflow as tf

    with tf.compat.v1.device(f"/job:{job}/task:{ps_index}"):
        return tf.compat.v1.FIFOQueue(
            QUEUE_CAPACITY,
            [tf.int64],
            shapes=[[]],
            shared_name=name,
            name=f"{name}_{job}_{ps_index}",
        )


def done_signal_op(cluster: ClusterInfo) -> Any:
    """Op (in the default graph) that tells every PS this trainer task is finished."""
    import tensorflow as tf

    me = task_id(cluster.task_type, cluster.task_index)
    ops = [_queue(DONE_QUEUE, i).enqueue(tf.constant(me, tf.int64)) for i, _ in cluster.ps_tasks]
    return tf.group(*ops, name="taas_signal_done")


class StartBarrier:
    """Sync-mode start barrier on PS 0 (build in the default graph before finalising)."""

    def __init__(self, cluster: ClusterInfo, parties: int) -> None:
        import tensorflow as tf

        queue = _queue("taas_ready", cluster.ps_tasks[0][0])
        me = task_id(cluster.task_type, cluster.task_index)
        self.parties = parties
        self.arrive = queue.enqueue(tf.constant(me, tf.int64))
        self.size = queue.size()

    def wait(self, session: Any, timeout: float, task: str) -> None:
        """Arrive, then wait until ``parties`` tasks have arrived (raw session, no hooks)."""
        session.run(self.arrive)
        deadline = time.monotonic() + timeout
        while (arrived := int(session.run(self.size))) < self.parties:
            if time.monotonic() > deadline:
                raise PeerUnreachableError(
                    f"[{task}] sync start barrier: only {arrived}/{self.parties} replicas arrived "
                    f"within {timeout:.0f}s (startup_timeout_secs)"
                )
            time.sleep(_POLL_SECS)


def wait_for_ps(cluster: ClusterInfo, timeout: float) -> None:
    """Return when every PS accepts TCP connections; raise PeerUnreachableError after timeout."""
    deadline = time.monotonic() + timeout
    for index, host in cluster.ps_tasks:
        name, _, port = host.rpartition(":")
        while True:
            try:
                with socket.create_connection((name, int(port)), timeout=1.0):
                    break
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise PeerUnreachableError(
                        f"[{cluster.task_name}] PS ps:{index} at {host} unreachable after "
                        f"{timeout:.0f}s (startup_timeout_secs): {exc}"
                    ) from None
                time.sleep(_POLL_SECS * 2)


def expected_trainers(cluster: ClusterInfo) -> set[int]:
    """The ids a graph-mode PS waits for: every trainer task it knows of (the dynamic-worker
    form: the chief's alone)."""
    expected = {task_id(kind, i) for kind, i in cluster.trainer_tasks}
    return expected or {task_id(*cluster.chief_task)}


def chief_hosts(cluster: ClusterInfo) -> list[str]:
    """The chief's address, if the cluster names it: what a graph-mode PS stays for after
    SIGTERM (the chief's last checkpoint reads its variables)."""
    kind, index = cluster.chief_task
    host = cluster.jobs.get(kind, {}).get(index)
    return [host] if host else []


def serve_ps(cluster: ClusterInfo, server: Any, config: Any) -> None:
    """Serve variables until every known trainer task has said it is done."""
    stopping.serves(chief_hosts(cluster))
    serve_until_done(
        cluster.task_name,
        "ps",
        cluster.task_index,
        server.target,
        config,
        expected_trainers(cluster),
        "trainer",
    )


def serve_until_done(
    task: str, job: str, index: int, target: str, config: Any, expected: set[int], who: str
) -> None:
    """Serve (the gRPC server runs in the background) until ``expected`` ids said "done".

    ``job``/``index``: this task's place in the cluster its server was started with (the
    TensorFlow 2 engine's ParameterServerStrategy renames worker 0 to chief, see
    ``taas.keras.strategies``); ``who`` names the tasks in the log line.
    """
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        dequeue = _queue(DONE_QUEUE, index, job).dequeue()
    print(
        f"[{task}] serving at {target}; waiting for {len(expected)} {who} task(s) to finish",
        flush=True,
    )
    seen: set[int] = set()
    with tf.compat.v1.Session(target, graph=graph, config=config) as session:
        while not expected <= seen:
            seen.add(int(session.run(dequeue)))
        # Training is over: from here a stop request (the operator's cleanPodPolicy deleting
        # this pod as soon as the chief succeeds) is a clean end, not a kill.
        stopping.finished(0)
        # Let the last trainer's enqueue call get its reply before this server goes away.
        time.sleep(LINGER_SECS)
    print(f"[{task}] all {who} tasks done; exiting", file=sys.stdout, flush=True)


def signal_done_to(task: str, me: int, targets: list[tuple[str, int, str]], timeout: float) -> None:
    """Tell each ``(job, index, host)`` task that ``me`` is done, each through its own server.

    One session per target, filtered to that task, all at once, each in a thread of its own:
    a peer that is down (a worker being recreated) or silent (its node powered off: making
    the session waits for an answer that never comes) costs at most ``timeout`` seconds (and
    one more) in all and a note, never a hang.
    """
    deadline = time.monotonic() + timeout + 1.0  # a moment for a run's own timeout to report
    threads = [
        threading.Thread(
            target=_signal_done, args=(task, me, job, index, host, timeout), daemon=True
        )
        for job, index, host in targets
    ]
    for thread in threads:
        thread.start()
    for thread, (job, index, _) in zip(threads, targets, strict=True):
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():  # left behind: the process ends without it
            print(f"[{task}] note: done-signal to {job}:{index}: no answer", flush=True)


def _signal_done(task: str, me: int, job: str, index: int, host: str, timeout: float) -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        enqueue = _queue(DONE_QUEUE, index, job).enqueue(tf.constant(me, tf.int64))
    config = v1.ConfigProto(device_filters=[f"/job:{job}/task:{index}"])
    options = v1.RunOptions(timeout_in_ms=int(timeout * 1000))
    session = v1.Session(f"grpc://{host}", graph=graph, config=config)
    # Not closed: closing a session whose server just exited can block; the process ends.
    _KEPT.append(session)
    try:
        session.run(enqueue, options=options)
    except tf.errors.OpError as exc:
        print(f"[{task}] note: done-signal to {job}:{index}: {exc.message[:120]}", flush=True)


_KEPT: list[Any] = []
