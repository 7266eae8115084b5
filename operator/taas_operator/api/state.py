"""What a TFJob is doing, in one word and a reason: the State column of `kubectl get tfjobs`.

    job_state(status) -> JobState(state, reason, message)       from a TFJobStatus
    body_state(status_dict) -> JobState                          from a stored object's status

Kubeflow's condition list says what happened (Created, Running, Restarting, Succeeded, Failed,
Suspended, each True or False); its last entry is not what the job is doing: a job whose image
does not exist ends its list with Running False. The state reads the whole list, terminal
first:

=============  ==============================================================================
state          when
=============  ==============================================================================
Failed         Failed True (the reason: the condition's, e.g. BackoffLimitExceeded)
Succeeded      Succeeded True
Suspended      Suspended True
Restarting     Restarting True
Running        Running True
Waiting        Running False: the reason is why it does not run (Unschedulable,
               ImagePullBackOff, WaitingForGang, WaitingForAdmission, NamespaceCreationLimit...)
Created        Created True, nothing else yet
(empty)        no condition: the operator has not looked at the job yet (shown as Pending)
=============  ==============================================================================

The operator writes it as `status.state` and `status.stateReason` with every condition it sets
(`planner.conditions.set_condition`), and every tool that shows a job's state (`taas get`,
`taas run`'s table, the dashboard, the operator's metrics) derives it with this module, so all
say the same words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from taas_operator.api.constants import (
    COND_CREATED,
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    COND_SUSPENDED,
    REASON_CREATED,
    REASON_FAILED,
    REASON_RESTARTING,
    REASON_RUNNING,
    REASON_SUCCEEDED,
    REASON_SUSPENDED,
)
from taas_operator.api.models import TFJobStatus

STATE_WAITING = "Waiting"
#: What a job without any condition is shown as (the stored state stays empty).
STATE_PENDING = "Pending"
#: Conditions that, when True, are the state itself; the first one found wins.
_BY_PRIORITY = (COND_FAILED, COND_SUCCEEDED, COND_SUSPENDED, COND_RESTARTING, COND_RUNNING)
#: Kubeflow's own reasons repeat the state's word: no reason to show.
_PLAIN = {
    REASON_CREATED,
    REASON_FAILED,
    REASON_RESTARTING,
    REASON_RUNNING,
    REASON_SUCCEEDED,
    REASON_SUSPENDED,
}


class JobState(NamedTuple):
    """The job's state word, the reason for it (a condition's reason) and its message."""

    state: str
    reason: str  # "" when the condition's reason is Kubeflow's plain one (TFJobRunning...)
    message: str

    @property
    def shown(self) -> str:
        """The state as tables print it: Pending for a job without any condition."""
        return self.state or STATE_PENDING

    @property
    def label(self) -> str:
        """State and reason in one phrase, "Waiting: ImagePullBackOff" (the dashboard's)."""
        return f"{self.shown}: {self.reason}" if self.reason else self.shown


def _state(conditions: Iterable[tuple[str, str, str, str]]) -> JobState:
    """The state from (type, status, reason, message) tuples, in the list's order."""
    latest: dict[str, tuple[str, str, str]] = {}
    for type_, status, reason, message in conditions:
        latest[type_] = (status, "" if reason in _PLAIN else reason, message)
    for type_ in _BY_PRIORITY:
        status, reason, message = latest.get(type_, ("", "", ""))
        if status == "True":
            return JobState(type_, reason, message)
    status, reason, message = latest.get(COND_RUNNING, ("", "", ""))
    if status == "False":
        return JobState(STATE_WAITING, reason, message)
    status, reason, message = latest.get(COND_CREATED, ("", "", ""))
    if status == "True":
        return JobState(COND_CREATED, reason, message)
    return JobState("", "", "")


def job_state(status: TFJobStatus) -> JobState:
    """The state of a job with this status (see the module)."""
    return _state((c.type, c.status, c.reason, c.message) for c in status.conditions)


def body_state(status: Mapping[str, Any] | None) -> JobState:
    """The state from a stored object's `status` dict (anything in it may be malformed:
    anyone with tfjobs/status may write it; what is not a condition is skipped)."""
    conditions = (status or {}).get("conditions") if isinstance(status, Mapping) else None
    rows = [
        (
            str(c.get("type") or ""),
            str(c.get("status") or ""),
            str(c.get("reason") or ""),
            str(c.get("message") or ""),
        )
        for c in (conditions if isinstance(conditions, list) else [])
        if isinstance(c, Mapping)
    ]
    return _state(rows)
