"""Status conditions with Kubeflow's rules (commonutil.UpdateJobConditions), in place.

    set_condition(status, type_, status_value, reason, message, now, refresh=False) -> bool
    fail_invalid_spec(status, namespace, name, problem, now) -> str | None     # the message
    fail_job(status, name, reason, message, now) -> bool       # False: it had ended already

- nothing changes once the job has a Failed=True condition (terminal stays terminal);
- a condition with the same status and reason is left as it is (TaaS: unless `refresh` and
  its message changed, e.g. a count of unschedulable replicas: the message is replaced);
- a message is kept to `api.text.MESSAGE_LIMIT` characters (pod text in it is unbounded);
- lastTransitionTime is kept when only reason/message change;
- setting a type removes its older entry and appends the new one; Running and Restarting replace
  each other; Succeeded or Failed turn an existing Running condition to False;
- (TaaS) `status.state` and `status.stateReason` follow the conditions (`api.state`).

A spec the models refuse (stored while an older CRD was installed), or a pod template the
apiserver refuses, fails the job once (`fail_invalid_spec`): Created if missing, Failed with
reason InvalidTFJobSpec naming the field and the fix, completionTime; never a retry loop.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from taas_operator.api.constants import (
    COND_CREATED,
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    REASON_CREATED,
    REASON_INVALID_SPEC,
)
from taas_operator.api.models import JobCondition, TFJobStatus
from taas_operator.api.state import job_state
from taas_operator.api.text import bounded

_EXCLUSIVE = {COND_RUNNING: COND_RESTARTING, COND_RESTARTING: COND_RUNNING}


def set_condition(
    status: TFJobStatus,
    type_: str,
    value: Literal["True", "False"],
    reason: str,
    message: str,
    now: datetime,
    refresh: bool = False,
) -> bool:
    """Set a condition like Kubeflow does; return whether anything changed."""
    if status.is_true(COND_FAILED):
        return False
    message = bounded(message)
    current = status.condition(type_)
    same = current is not None and current.status == value and current.reason == reason
    if same and (not refresh or (current is not None and current.message == message)):
        return False
    transition = current.last_transition_time if current and current.status == value else now
    kept: list[JobCondition] = []
    for cond in status.conditions:
        if cond.type == type_ or cond.type == _EXCLUSIVE.get(type_):
            continue
        ending = type_ in (COND_SUCCEEDED, COND_FAILED)
        if ending and cond.type == COND_RUNNING and cond.status != "False":
            cond = cond.model_copy(update={"status": "False", "last_transition_time": now})
        kept.append(cond)
    kept.append(
        JobCondition(
            type=type_,
            status=value,
            reason=reason,
            message=message,
            last_update_time=now,
            last_transition_time=transition,
        )
    )
    status.conditions = kept
    said = job_state(status)
    status.state, status.state_reason = said.state, said.reason
    return True


def fail_invalid_spec(
    status: TFJobStatus, namespace: str, name: str, problem: str, now: datetime
) -> str | None:
    """Fail the job for an invalid spec, in place; the message, or None when already failed."""
    if status.is_true(COND_FAILED):
        return None
    message = f"TFJob {namespace}/{name} has an invalid spec: {problem}"
    _fail(status, name, REASON_INVALID_SPEC, message, now)
    return message


def fail_job(status: TFJobStatus, name: str, reason: str, message: str, now: datetime) -> bool:
    """Fail the job at once, in place, as for an invalid spec; False when it has ended
    already (Failed or Succeeded: terminal stays terminal)."""
    if status.finished:
        return False
    _fail(status, name, reason, message, now)
    return True


def _fail(status: TFJobStatus, name: str, reason: str, message: str, now: datetime) -> None:
    """Created if missing, Failed with `reason` and `message`, completionTime."""
    if status.condition(COND_CREATED) is None:
        set_condition(
            status, COND_CREATED, "True", REASON_CREATED, f"TFJob {name} is created.", now
        )
    set_condition(status, COND_FAILED, "True", reason, message, now)
    status.completion_time = status.completion_time or now
