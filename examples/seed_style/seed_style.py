"""A seed-style distributed TensorFlow program: flags, tf.compat.v1, between-graph replication.

No TaaS library: the program reads its place in the cluster from the classic flags that the
TFJob passes through `$(PS_HOSTS)`-style args (see job.yaml), exactly as programs written for
the first TensorFlow distributed tutorials did:

    python seed_style.py --ps_hosts=h:p --worker_hosts=h:p,h:p --job_name=worker --task_index=0

Model: softmax regression on scikit-learn's 8x8 digits (shipped with the package, no
download), asynchronous SGD, variables on the PS via `replica_device_setter`.

Ending cleanly (a bare `server.join()` never returns): every PS waits on a "done" queue it
hosts. Non-chief workers put a token in the chief's queue when they finish; the chief (worker 0)
waits for those, reports the test accuracy, then puts one token in each PS queue and exits;
each PS exits when its token arrives. No MonitoredTrainingSession: its non-chief workers wait a
fixed 30 s for the chief; here they poll `report_uninitialized_variables` instead.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits

v1 = tf.compat.v1


def parse_args() -> argparse.Namespace:
    """The classic flags, plus a few training knobs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ps_hosts", required=True, help="comma-separated host:port list")
    parser.add_argument("--worker_hosts", required=True, help="comma-separated host:port list")
    parser.add_argument("--job_name", required=True, choices=["ps", "worker"])
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--train_steps", type=int, default=300, help="global steps")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--learning_rate", type=float, default=0.2)
    return parser.parse_args()


def done_queues(num_ps: int, num_workers: int) -> tuple[list, object]:
    """One token queue per PS (the PS waits on it) and one for the chief (on PS 0)."""
    ps_queues = []
    for i in range(num_ps):
        with tf.device(f"/job:ps/task:{i}"):
            ps_queues.append(v1.FIFOQueue(1, tf.int32, shared_name=f"ps_done_{i}"))
    with tf.device("/job:ps/task:0"):
        chief_queue = v1.FIFOQueue(max(1, num_workers), tf.int32, shared_name="workers_done")
    return ps_queues, chief_queue


def log(args: argparse.Namespace, message: str) -> None:
    print(f"[{args.job_name}:{args.task_index}] {message}", flush=True)


def run_ps(args, server, ps_queues) -> None:
    """Serve variables until this PS's done token arrives."""
    config = v1.ConfigProto(device_filters=[f"/job:ps/task:{args.task_index}"])
    with v1.Session(server.target, config=config) as session:
        log(args, "serving; waiting for the done token")
        session.run(ps_queues[args.task_index].dequeue())
    log(args, "all workers done; exiting")


def load_data(seed: int):
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(labels))
    images, labels = images[order], labels[order]
    split = int(0.8 * len(labels))
    return images[:split], labels[:split], images[split:], labels[split:]


def run_worker(args, cluster, server, ps_queues, chief_queue) -> None:
    """Train until the global step reaches --train_steps; the chief also ends the PS tasks."""
    is_chief = args.task_index == 0
    num_workers = len(cluster.job_tasks("worker"))
    train_x, train_y, test_x, test_y = load_data(args.task_index)
    device = v1.train.replica_device_setter(
        worker_device=f"/job:worker/task:{args.task_index}", cluster=cluster
    )
    with v1.device(device):
        global_step = v1.train.get_or_create_global_step()
        images = v1.placeholder(tf.float32, [None, 64])
        labels = v1.placeholder(tf.int64, [None])
        weights = v1.get_variable("weights", [64, 10], initializer=v1.zeros_initializer())
        bias = v1.get_variable("bias", [10], initializer=v1.zeros_initializer())
        logits = tf.matmul(images, weights) + bias
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        optimizer = v1.train.GradientDescentOptimizer(args.learning_rate)
        train_op = optimizer.minimize(loss, global_step=global_step)
        correct = tf.equal(tf.argmax(logits, 1), labels)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        init = v1.global_variables_initializer()
        # Only non-chief workers poll it (an unused tensor draws a warning in graph mode).
        uninitialized = None if is_chief else v1.report_uninitialized_variables()

    config = v1.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{args.task_index}"])
    rng = np.random.default_rng(100 + args.task_index)
    with v1.Session(server.target, config=config) as session:
        if uninitialized is None:
            session.run(init)
        else:
            while len(session.run(uninitialized)):
                time.sleep(0.2)
        log(args, "training")
        step, local = 0, 0
        while step < args.train_steps:
            batch = rng.integers(0, len(train_y), args.batch_size)
            _, step, value = session.run(
                [train_op, global_step, loss], {images: train_x[batch], labels: train_y[batch]}
            )
            local += 1
            if local % 50 == 0:
                log(args, f"local step {local}, global step {step}, loss {value:.4f}")
        log(args, f"done after {local} local steps (global step {step})")
        if not is_chief:
            session.run(chief_queue.enqueue(1))
            return
        for _ in range(num_workers - 1):
            session.run(chief_queue.dequeue())
        result = session.run(accuracy, {images: test_x, labels: test_y})
        log(args, f"test accuracy: {result:.4f}")
        for queue in ps_queues:
            session.run(queue.enqueue(1))


def main() -> None:
    args = parse_args()
    v1.disable_eager_execution()
    cluster = tf.train.ClusterSpec(
        {"ps": args.ps_hosts.split(","), "worker": args.worker_hosts.split(",")}
    )
    server = tf.distribute.Server(cluster, job_name=args.job_name, task_index=args.task_index)
    ps_queues, chief_queue = done_queues(
        len(cluster.job_tasks("ps")), len(cluster.job_tasks("worker"))
    )
    if args.job_name == "ps":
        run_ps(args, server, ps_queues)
    else:
        run_worker(args, cluster, server, ps_queues, chief_queue)


if __name__ == "__main__":
    main()
