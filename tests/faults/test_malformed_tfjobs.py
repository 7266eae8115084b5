"""Randomly malformed TFJobs (hypothesis) sent to a real apiserver with the TaaS CRD and a real
TaaS operator: each one is refused at create with a message (HTTP 400/422), or it is stored and
the operator marks it Failed with a message. The operator never exits, logs no traceback, and
still runs a valid job afterwards."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from bench.harness.observer import Observer
from bench.harness.workloads import tfjob_manifest
from tests.faults.fault_helpers import (
    admin_api,
    condition_true,
    create_namespace,
    list_tfjobs,
)
from tests.faults.malformed import malformed_tfjobs, pod_level_mutations, valid_tfjob
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(1800)]

NAMESPACE = "malformed"


def _failed_message(job: dict[str, Any]) -> str:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Failed" and cond.get("status") == "True":
            return str(cond.get("message") or "")
    return ""


@pytest.mark.parametrize(
    "examples",
    [pytest.param(50, id="50-jobs"), pytest.param(500, id="500-jobs", marks=pytest.mark.slow)],
)
def test_malformed_tfjobs_are_refused_or_fail_with_a_message(
    fault_plane, start_operator, examples: int
) -> None:
    api = admin_api(fault_plane)
    custom = client.CustomObjectsApi(api)
    operator = start_operator()
    create_namespace(api, NAMESPACE)
    counter = itertools.count()
    refused: list[tuple[str, int]] = []
    accepted: dict[str, str] = {}  # job name -> what is wrong with it

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(data=st.data())
    def send(data: st.DataObject) -> None:
        what, manifest = data.draw(malformed_tfjobs(name=f"bad-{next(counter):04d}"))
        try:
            custom.create_namespaced_custom_object(
                "kubeflow.org", "v1", NAMESPACE, "tfjobs", manifest
            )
        except client.ApiException as err:
            assert err.status in (400, 422), f"{what}: HTTP {err.status} (want 400/422): {err}"
            assert err.body and "message" in err.body, f"{what}: refusal without a message"
            refused.append((what, err.status))
            return
        accepted[manifest["metadata"]["name"]] = what

    send()
    # every pod-level fault once more, so the operator's side is exercised in every run
    for i, (what, mutate) in enumerate(pod_level_mutations()):
        manifest = valid_tfjob(f"pod-level-{i}")
        mutate(manifest)
        custom.create_namespaced_custom_object("kubeflow.org", "v1", NAMESPACE, "tfjobs", manifest)
        accepted[f"pod-level-{i}"] = what
    assert operator.alive(), f"operator exited:\n{operator.log_tail()}"

    def all_failed() -> bool:
        jobs = list_tfjobs(api, NAMESPACE)
        return all(_failed_message(jobs.get(name, {})) for name in accepted)

    try:
        wait(
            all_failed,
            "stored malformed TFJobs to end Failed",
            timeout=60 + 0.5 * len(accepted),
            every=0.5,
        )
    except AssertionError:
        jobs = list_tfjobs(api, NAMESPACE)
        not_failed = {
            name: what for name, what in accepted.items() if not _failed_message(jobs[name])
        }
        raise AssertionError(
            f"{len(not_failed)} of {len(accepted)} stored malformed TFJobs did not end Failed "
            f"with a message: {not_failed}"
        ) from None

    # the operator is still there and still works
    create_namespace(api, "healthy")
    observer = Observer(api, "healthy").start()
    custom.create_namespaced_custom_object(
        "kubeflow.org", "v1", "healthy", "tfjobs", tfjob_manifest("ok", "healthy", 1, 1)
    )
    assert observer.wait_for({"ok": 2}, 120), f"valid job not run:\n{operator.log_tail()}"
    observer.stop()
    wait(
        lambda: condition_true(list_tfjobs(api, "healthy")["ok"], "Created"),
        "job Created",
        timeout=60,
        every=0.5,
    )
    assert operator.alive(), f"operator exited:\n{operator.log_tail()}"
    assert "Traceback" not in operator.log.read_text(errors="replace"), operator.log_tail(60)
    print(f"{len(refused)} refused at create, {len(accepted)} stored and Failed by the operator")
