"""Serving without TensorFlow's Python API: a task that only serves starts in a fraction of an
``import tensorflow``.

    lean_available() -> bool        the program has not imported TensorFlow (yet)
    LeanServer(task, job, index, cluster_spec, config_fields, expected, who, serves).run()

Which tasks only serve: the PS tasks of a graph-mode job, and the PS and worker tasks of a
TensorFlow 2 ParameterServerStrategy job (the coordinator sends them functions to run; no
Python of the program's runs there). They need TensorFlow's C++ runtime and its gRPC server, not
its Python API, whose import is most of ``import tensorflow``'s CPU time (thousands of modules,
Keras 3 and scikit-learn among them). Where every replica starts at once on fewer cores than
replicas (``taas run``, a small node), the serving tasks' imports took the CPU the chief
needed (docs/benchmarks.md, Trainer: the start-up before and after).

How: the ``tensorflow`` package is registered without running its ``__init__`` (which imports
the whole public API), and only what the server and the "done" queue need is imported
(``tensorflow.python.training.server_lib``, ``client.session``, ``ops.data_flow_ops``: about a
tenth of the modules, a third of the CPU of a full import). The task serves until its trainers
said "done" on the same queue ``taas.runtime.coordination`` uses (same name, shape and device),
then the runner ends the process (``os._exit``): the half-registered package is never seen by
other code. Taken only when the program has not imported TensorFlow before ``main()`` (its
hooks import it: examples/keras_digits); a program that imports it at its top pays the full
import, as before, and serves through ``coordination`` the same way. TensorFlow internals are
used here on purpose (its version is pinned, 2.21); tests run both paths.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Sequence
from typing import Any

from taas.core import stopping
from taas.runtime.coordination import DONE_QUEUE, LINGER_SECS, QUEUE_CAPACITY


def lean_available() -> bool:
    """True when TensorFlow's Python API is not imported in this process."""
    return "tensorflow" not in sys.modules and importlib.util.find_spec("tensorflow") is not None


def _internals() -> dict[str, Any]:
    """TensorFlow's server, session, queue and proto modules, without its public API."""
    if "tensorflow" not in sys.modules:
        spec = importlib.util.find_spec("tensorflow")
        assert spec is not None
        sys.modules["tensorflow"] = importlib.util.module_from_spec(spec)  # __init__ not run
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.client import session
    from tensorflow.python.framework import dtypes, ops
    from tensorflow.python.ops import data_flow_ops
    from tensorflow.python.training import server_lib

    return {
        "config_pb2": config_pb2,
        "session": session,
        "dtypes": dtypes,
        "ops": ops,
        "data_flow_ops": data_flow_ops,
        "server_lib": server_lib,
    }


class LeanServer:
    """One serving task (see the module): its gRPC server, then the wait for "done"."""

    def __init__(
        self,
        task: str,
        job: str,
        index: int,
        cluster_spec: dict[str, Any],
        config_fields: dict[str, Any],
        expected: set[int],
        who: str,
        serves: Sequence[str] = (),
    ) -> None:
        """``config_fields``: the server's ConfigProto, as ``{"field": value}``,
        ``{"gpu_options.field": value}`` or ``{"device_filters": [...]}`` (a list extends a
        repeated field); the "done" session adds this task's own device filter. ``serves``:
        the tasks ("host:port") it stays for after SIGTERM (``taas.core.stopping.serves``)."""
        self.task, self.job, self.index = task, job, index
        self.cluster_spec, self.config_fields = cluster_spec, config_fields
        self.expected, self.who, self.serves = expected, who, list(serves)

    def _config(self, tf: dict[str, Any], device_filters: list[str]) -> Any:
        config = tf["config_pb2"].ConfigProto()
        for name, value in self.config_fields.items():
            target = config
            *parents, field = name.split(".")
            for parent in parents:
                target = getattr(target, parent)
            if isinstance(value, list):
                getattr(target, field).extend(value)
            else:
                setattr(target, field, value)
        own = [f for f in device_filters if f not in config.device_filters]
        config.device_filters.extend(own)
        return config

    def run(self) -> None:
        """Serve until every expected task said "done" (then a clean stop is exit 0)."""
        tf = _internals()
        server = tf["server_lib"].Server(
            tf["server_lib"].ClusterSpec(self.cluster_spec),
            job_name=self.job,
            task_index=self.index,
            protocol="grpc",
            config=self._config(tf, []),
            start=True,
        )
        stopping.serves(self.serves)
        graph = tf["ops"].Graph()
        with graph.as_default(), tf["ops"].device(f"/job:{self.job}/task:{self.index}"):
            queue = tf["data_flow_ops"].FIFOQueue(
                QUEUE_CAPACITY,
                [tf["dtypes"].int64],
                shapes=[[]],
                shared_name=DONE_QUEUE,
                name=f"{DONE_QUEUE}_{self.job}_{self.index}",
            )
            dequeue = queue.dequeue()
        print(
            f"[{self.task}] serving at {server.target} (lean: without TensorFlow's Python API); "
            f"waiting for {len(self.expected)} {self.who} task(s) to finish",
            flush=True,
        )
        own = self._config(tf, [f"/job:{self.job}/task:{self.index}"])
        seen: set[int] = set()
        with tf["session"].Session(server.target, graph=graph, config=own) as sess:
            while not self.expected <= seen:
                seen.add(int(sess.run(dequeue)))
            stopping.finished(0)
            time.sleep(LINGER_SECS)
        print(f"[{self.task}] all {self.who} tasks done; exiting", flush=True)
