"""The pure parts of `taas run`'s checks before it starts: Kubernetes quantities, the fit of a
run against a given machine (`local.capacity`), and which pod template fields are said to be not
applied (`local.unapplied`), for a root and a non-root process. Table tests, no processes."""

from __future__ import annotations

from typing import Any

import pytest

from taas_operator.api import parse_tfjob
from taas_operator.local.capacity import MIB, REPLICA_MEMORY, Machine, check_fit, quantity
from taas_operator.local.unapplied import unapplied
from tests.local.local_harness import replica, tfjob

GIB = 1024 * MIB


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", 0.5),
        ("2", 2.0),
        (3, 3.0),
        ("2Gi", 2 * GIB),
        ("1G", 1e9),
        ("1.5Mi", 1.5 * MIB),
        ("1e3", 1000.0),
        ("12Qi", None),
        ("lots", None),
        ("", None),
    ],
)
def test_quantity(text: Any, value: float | None) -> None:
    assert quantity(text) == value


def _job(name: str, **types: dict[str, Any]) -> Any:
    return parse_tfjob(tfjob(name, types))


def test_memory_counts_requests_else_the_measured_estimate() -> None:
    job = _job(
        "mix",
        PS=replica("pass", resources={"requests": {"memory": "1Gi"}}),
        Worker=replica("pass", replicas=3),
    )
    needed = GIB + 3 * REPLICA_MEMORY
    fits = check_fit([job], Machine(cpus=4, memory_available=needed))
    assert fits.problems == [] and fits.warnings == []
    short = check_fit([job], Machine(cpus=4, memory_available=needed - 1))
    assert short.misfit == (
        "4 replicas of TFJob mix do not fit this machine: memory: about 2.5 GiB needed (3 at "
        "512 MiB each, what one TensorFlow replica takes, the rest at their "
        "resources.requests.memory), 2.5 GiB available"
    )


def test_limits_count_when_no_request_and_cpu_is_only_a_warning() -> None:
    job = _job("cpu", Worker=replica("pass", replicas=2, resources={"limits": {"cpu": "1500m"}}))
    fit = check_fit([job], Machine(cpus=2, memory_available=None))
    assert fit.problems == []
    assert fit.warnings == ["3 CPUs requested (resources.requests.cpu), 2 here: they share"]


def test_processes_per_cpu_warn_then_refuse_over_all_jobs() -> None:
    jobs = [_job("a", Worker=replica("pass", replicas=5)), _job("b", Worker=replica("pass"))]
    machine = Machine(cpus=2, memory_available=None)
    assert check_fit(jobs, machine).warnings == [
        "6 processes on 2 CPU(s), more than 2 per CPU: expect a slow start"
    ]
    assert check_fit(jobs, machine).what == "6 replicas of TFJob a, b"
    crowd = [_job("c", Worker=replica("pass", replicas=17))]
    assert check_fit(crowd, machine).problems == [
        "17 processes on 2 CPU(s), more than 8 per CPU (TensorFlow processes starting together "
        "that slowly miss their start-up deadlines)"
    ]


RESTRICTED = {
    "runAsNonRoot": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


@pytest.mark.parametrize(
    ("uid", "capabilities", "said"),
    [
        (1000, 0, "allowPrivilegeEscalation, seccompProfile"),
        (0, 0x1FF, "runAsNonRoot, allowPrivilegeEscalation, capabilities, seccompProfile"),
    ],
    ids=["non-root", "root"],
)
def test_security_context_is_said_unless_already_true(
    uid: int, capabilities: int, said: str
) -> None:
    """The restricted profile: a non-root user without capabilities already is non-root and
    holds none; seccomp and no_new_privs are not applied either way."""
    restricted = replica("pass", securityContext=RESTRICTED)
    job = _job("sec", PS=restricted, Worker=restricted)
    expected = ", ".join(f"securityContext.{field}" for field in said.split(", "))
    assert unapplied(job, uid=uid, capabilities=capabilities) == (
        f"TFJob sec: not applied on this machine: PS, Worker: {expected}"
    )


def test_scheduling_and_identity_fields_are_not_said() -> None:
    spec = replica("pass", imagePullPolicy="Always")
    pod = spec["template"]["spec"]
    pod.update(
        nodeSelector={"a": "b"},
        tolerations=[{"key": "k", "operator": "Exists"}],
        serviceAccountName="trainer",
        automountServiceAccountToken=False,
        terminationGracePeriodSeconds=3,
    )
    assert unapplied(_job("quiet", Worker=spec), uid=1000, capabilities=0) is None
