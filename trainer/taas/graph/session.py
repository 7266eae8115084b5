"""Session creators that do not stall: a non-chief polls for the chief's initialisation.

TensorFlow's creators use ``SessionManager(recovery_wait_secs=30)``: a worker that starts before
the chief has initialised the variables sleeps a fixed 30 s. These poll every 0.1 s instead and
check that the PS ports answer first (see ``taas.runtime.coordination.wait_for_ps``).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from tensorflow.python.training import session_manager

from taas.core.placement import ClusterInfo
from taas.runtime.coordination import wait_for_ps

POLL_SECS = 0.1


def _manager(scaffold: Any) -> Any:
    return session_manager.SessionManager(
        local_init_op=scaffold.local_init_op,
        local_init_feed_dict=scaffold.local_init_feed_dict,
        ready_op=scaffold.ready_op,
        ready_for_local_init_op=scaffold.ready_for_local_init_op,
        graph=tf.compat.v1.get_default_graph(),
        recovery_wait_secs=POLL_SECS,
    )


class _FastPolling:
    """What both creators add: a fast-polling SessionManager and a PS reachability check."""

    _session_manager: Any
    _scaffold: Any
    _cluster: ClusterInfo
    _timeout: float

    def _get_session_manager(self) -> Any:
        if not self._session_manager:
            self._session_manager = _manager(self._scaffold)
        return self._session_manager

    def create_session(self) -> Any:
        wait_for_ps(self._cluster, self._timeout)
        return super().create_session()  # type: ignore[misc]


class ChiefSessionCreator(_FastPolling, tf.compat.v1.train.ChiefSessionCreator):
    """Chief: restore from the model dir, else initialise (and run the init_fn)."""

    def __init__(self, cluster: ClusterInfo, timeout: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._cluster = cluster
        self._timeout = timeout


class WorkerSessionCreator(_FastPolling, tf.compat.v1.train.WorkerSessionCreator):
    """Non-chief: wait (polling fast, at most ``timeout``) until the chief has initialised."""

    def __init__(self, cluster: ClusterInfo, timeout: float, **kwargs: Any) -> None:
        super().__init__(max_wait_secs=timeout, **kwargs)
        self._cluster = cluster
        self._timeout = timeout
