"""Which TensorFlow messages mean a lost peer (retryable 138), on the real texts of TF 2.21's
coordination service, collectives and gRPC, and which do not (a bug: 1)."""

from __future__ import annotations

import pytest

from taas.core.exit_codes import names_lost_peer

LOST = [
    # the CI run that failed with exit 1: both workers at the end barrier
    "Task /job:worker/replica:0/task:1 heartbeat timeout. This indicates that the remote task "
    "has failed, got preempted, or crashed unexpectedly. Check the task logs for an earlier "
    "error or scheduler events (e.g. preemption, eviction) to debug further.",
    "Agent must be in CONNECTED state. It is currently in ERROR.",
    # what TF 2.21 raised (InternalError) when test_exit_codes_tf stopped a peer at the end
    "Barrier failed because: task is set to ERROR: UNAVAILABLE: Task /job:worker/replica:0/"
    "task:1 heartbeat timeout. [type.googleapis.com/tensorflow.CoordinationServiceError='']. "
    "Barrier Id: taas_training_end::0, Task: /job:worker/replica:0/task:1",
    "Error reported from /job:worker/task:1: The following tasks are unhealthy (stopped "
    "sending heartbeats):\n/job:worker/replica:0/task:1",
    "Agent must be in CONNECTED state. It is currently DISCONNECTED.",
    "Agent is not in CONNECTED state. Current state: ERROR",
    # the same wrapped in another status (the code written into the text)
    "Barrier failed: UNAVAILABLE: Task /job:worker/replica:0/task:0 lost",
    "Coordination service has stopped. RecordHeartbeat() from task: /job:worker/replica:0/task:1",
    "Coordination service has been shut down.",
    "Failed to send RPC to coordination service. Either the leader task was preempted/died/"
    "restarted unexpectedly or this task is experiencing network issues.",
    "All tasks were set to error because coordination service encountered an error, but was "
    "unable to inform clients. Error: ",
    "Barrier timed out. Id: taas_training_end. This usually happens because a task triggered "
    "the barrier too early or too slowly.",
    "Leader incarnation ID mismatch: the coordination  leader (usually slice 0 task 0) has "
    "restarted.",
    "Collective ops is aborted by: Socket closed",
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:4000: "
    "Failed to connect to remote host: Connection refused",
]

NOT_LOST = [
    "Incompatible shapes: [32,10] vs. [32,1]",
    "Coordination service is not enabled.",
    "Coordination service agent has not been initialized.",
    "Could not find variable dense/kernel. This could mean that the variable has been deleted.",
    "the task is unavailable: not a status code",  # lower case: a user's own words
]


@pytest.mark.parametrize("message", LOST)
def test_a_lost_peer_heartbeat_or_coordination_service_is_named(message: str) -> None:
    assert names_lost_peer(message)


@pytest.mark.parametrize("message", NOT_LOST)
def test_a_models_or_setups_error_is_not(message: str) -> None:
    assert not names_lost_peer(message)
