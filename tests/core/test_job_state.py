"""What a job is doing (`api.state`): the State and Reason columns of `kubectl get tfjobs`,
written by the planner as status.state / stateReason, and read the same way by `taas get`,
`taas run`'s table, the dashboard and the metrics. A job that cannot run never says Running."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from taas_operator.api.models import JobCondition, TFJobStatus
from taas_operator.api.state import body_state, job_state
from taas_operator.client.console import jobs_table, not_running
from taas_operator.dashboard.views import job_state as dashboard_state
from taas_operator.planner import plan_job

from .helpers import job, pod

pytestmark = pytest.mark.fast
T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def _status(*conditions: tuple[str, str, str]) -> TFJobStatus:
    return TFJobStatus(
        conditions=[
            JobCondition(type=type_, status=value, reason=reason, message=f"{type_} {reason}")
            for type_, value, reason in conditions  # type: ignore[arg-type]
        ]
    )


@pytest.mark.parametrize(
    ("conditions", "state", "reason"),
    [
        ((), "", ""),
        ((("Created", "True", "TFJobCreated"),), "Created", ""),
        (
            (("Created", "True", "TFJobCreated"), ("Running", "False", "ImagePullBackOff")),
            "Waiting",
            "ImagePullBackOff",
        ),
        (
            (("Created", "True", "TFJobCreated"), ("Running", "False", "WaitingForGang")),
            "Waiting",
            "WaitingForGang",
        ),
        ((("Created", "True", "TFJobCreated"), ("Running", "True", "TFJobRunning")), "Running", ""),
        (
            (("Created", "True", "TFJobCreated"), ("Restarting", "True", "TFJobRestarting")),
            "Restarting",
            "",
        ),
        (
            (
                ("Created", "True", "TFJobCreated"),
                ("Running", "False", "TFJobSuspended"),
                ("Suspended", "True", "TFJobSuspended"),
            ),
            "Suspended",
            "",
        ),
        (
            (
                ("Created", "True", "TFJobCreated"),
                ("Running", "False", "TFJobRunning"),
                ("Succeeded", "True", "TFJobSucceeded"),
            ),
            "Succeeded",
            "",
        ),
        (
            (
                ("Created", "True", "TFJobCreated"),
                ("Running", "False", "ImagePullBackOff"),
                ("Failed", "True", "BackoffLimitExceeded"),
            ),
            "Failed",
            "BackoffLimitExceeded",
        ),
        # a resumed job: Suspended False, Running True
        (
            (("Suspended", "False", "TFJobResumed"), ("Running", "True", "TFJobRunning")),
            "Running",
            "",
        ),
    ],
)
def test_the_state_reads_every_condition_not_the_last_one(conditions, state, reason):
    status = _status(*conditions)
    assert job_state(status)[:2] == (state, reason)
    assert body_state(status.to_dict())[:2] == (state, reason)  # the same from a stored dict


def test_malformed_stored_status_gives_no_state_and_no_error():
    for status in (None, {}, {"conditions": "x"}, {"conditions": [1, None, {"type": 3}]}):
        assert body_state(status).shown == "Pending"  # type: ignore[arg-type]


def test_a_job_whose_image_is_missing_is_waiting_everywhere_with_the_reason():
    tfjob = job({"Worker": 2})
    plan = plan_job(tfjob, [], T0)
    tfjob = tfjob.model_copy(update={"status": plan.status})
    assert (tfjob.status.state, tfjob.status.state_reason) == ("Created", "")
    stuck = [pod("Worker", 0, "Pending", waiting_reason="ImagePullBackOff"), pod("Worker", 1)]
    plan = plan_job(tfjob, stuck, T0 + timedelta(seconds=5))
    tfjob = tfjob.model_copy(update={"status": plan.status})
    # Kubeflow's list ends with Running False: the stored state says Waiting, and why
    assert tfjob.status.conditions[-1].type == "Running"
    assert (tfjob.status.state, tfjob.status.state_reason) == ("Waiting", "ImagePullBackOff")
    assert tfjob.status.to_dict()["stateReason"] == "ImagePullBackOff"
    assert jobs_table([tfjob], T0)[1].split()[:3] == ["mnist", "Waiting", "ImagePullBackOff"]
    assert not_running(tfjob) is not None and not_running(tfjob)[0] == "ImagePullBackOff"
    assert dashboard_state(tfjob.to_dict())[:2] == ("Waiting", "ImagePullBackOff")
    running = [pod("Worker", 0), pod("Worker", 1)]
    plan = plan_job(tfjob, running, T0 + timedelta(seconds=10))
    assert (plan.status.state, plan.status.state_reason) == ("Running", "")
