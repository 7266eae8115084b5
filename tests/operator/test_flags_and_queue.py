"""Pure parts of the operator (no apiserver): `taas operator` flags and env -> settings, exit
code 2 with the flag named for bad values, the per-job work queue (coalescing, no overlap,
on-time wake-ups, backoff after errors) on a real asyncio loop, and how a pass's creations
become events."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Hashable
from datetime import UTC, datetime, timedelta

import pytest

from taas_operator.api.resources import POD, POLICY, SERVICE
from taas_operator.cli import main as taas_main
from taas_operator.controller import workqueue
from taas_operator.controller.flags import UsageError, add_arguments, settings_from_args
from taas_operator.controller.handlers import kopf_settings
from taas_operator.controller.reconcile.recorder import CREATE, DELETE, Done, pass_events
from taas_operator.controller.watch.children import CHILD_SELECTOR
from taas_operator.controller.workqueue import WorkQueue
from taas_operator.planner import Event, backoff_delay
from taas_operator.settings import OperatorSettings

pytestmark = pytest.mark.timeout(30)


def _parse(*argv: str) -> argparse.Namespace:
    return add_arguments(argparse.ArgumentParser()).parse_args(list(argv))


def test_flags_map_onto_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAAS_NAMESPACES", raising=False)
    settings = settings_from_args(
        _parse(
            "-n", "a", "--namespace", "b", "--cluster-domain", "cluster.local",
            "--concurrency", "4", "--log-level", "debug", "--peering", "taas",
            "--health-port", "0", "--no-network-policy", "--network-policy-namespace", "mon",
        )
    )  # fmt: skip
    assert settings.namespaces == ["a", "b"]
    assert settings.cluster_domain == "cluster.local"
    assert (settings.concurrency, settings.log_level, settings.peering) == (4, "DEBUG", "taas")
    assert (settings.health_port, settings.network_policy) == (0, False)
    assert settings.network_policy_extra_namespaces == ["mon"]


def test_env_is_used_and_flags_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAAS_NAMESPACES", '["x","y"]')
    monkeypatch.setenv("TAAS_CLUSTER_DOMAIN", "corp.local")
    settings = settings_from_args(_parse())
    assert (settings.namespaces, settings.cluster_domain) == (["x", "y"], "corp.local")
    assert settings.network_policy is True
    assert settings_from_args(_parse("--all-namespaces")).namespaces == []
    assert settings_from_args(_parse("-n", "z")).namespaces == ["z"]


@pytest.mark.parametrize(
    ("argv", "env", "named"),
    [
        (["--concurrency", "0"], {}, "--concurrency or TAAS_CONCURRENCY"),
        (["--log-level", "LOUD"], {}, "--log-level or TAAS_LOG_LEVEL"),
        (["--health-port", "70000"], {}, "--health-port or TAAS_HEALTH_PORT"),
        (["--gang-scheduler-name", "volcano"], {}, "must be 'scheduler-plugins' (scheduler-"),
        ([], {"TAAS_NAMESPACES": "team-a"}, "TAAS_NAMESPACES take JSON"),
        (["--kubeconfig", "/nonexistent/kubeconfig"], {}, "cannot load Kubernetes credentials"),
    ],
)
def test_bad_settings_exit_2_naming_the_flag(
    argv: list[str],
    env: dict[str, str],
    named: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert taas_main(["operator", *argv]) == 2
    assert named in capsys.readouterr().err


def test_namespace_and_all_namespaces_conflict(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        taas_main(["operator", "-n", "a", "--all-namespaces"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_every_setting_is_a_flag_with_its_model_help() -> None:
    """The flags are built from OperatorSettings: one per field, its help the field's
    description followed by the model's default and the TAAS_* variable."""
    parser = add_arguments(argparse.ArgumentParser())
    helps = {a.dest: " ".join((a.help or "").split()) for a in parser._actions}
    for name, field in OperatorSettings.model_fields.items():
        assert name in helps, f"no flag for {name}"
        assert f"env TAAS_{name.upper()}." in helps[name]
        assert " ".join((field.description or "").split())[1:] in helps[name]
    assert "Default: 16;" in helps["concurrency"] and "Default: 8080;" in helps["health_port"]
    assert "Default: on;" in helps["network_policy"]


def test_usage_error_is_a_value_error() -> None:
    assert issubclass(UsageError, ValueError)


def test_requests_coalesce_and_passes_never_overlap() -> None:
    async def scenario() -> tuple[int, int]:
        passes = 0
        running = 0
        overlap = 0
        release = asyncio.Event()

        async def run_pass(key: Hashable) -> datetime | None:
            nonlocal passes, running, overlap
            passes += 1
            running += 1
            overlap = max(overlap, running)
            if passes == 1:
                await release.wait()
            running -= 1
            return None

        queue = WorkQueue(run_pass)
        queue.request("job")
        await asyncio.sleep(0)
        for _ in range(10):  # a burst while the first pass runs
            queue.request("job")
        release.set()
        for _ in range(20):
            await asyncio.sleep(0)
        await queue.close()
        return passes, overlap

    passes, overlap = asyncio.run(scenario())
    assert (passes, overlap) == (2, 1)


def test_wake_up_time_is_honoured_and_errors_back_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workqueue, "BACKOFF_START", 0.05)

    async def scenario() -> list[tuple[str, datetime]]:
        seen: list[tuple[str, datetime]] = []
        done = asyncio.Event()

        async def run_pass(key: Hashable) -> datetime | None:
            now = datetime.now(UTC)
            seen.append((str(key), now))
            if key == "timed" and len([s for s in seen if s[0] == "timed"]) == 1:
                return now + timedelta(seconds=0.3)
            if key == "flaky" and len([s for s in seen if s[0] == "flaky"]) < 3:
                raise RuntimeError("apiserver said no")
            if len(seen) >= 5:
                done.set()
            return None

        queue = WorkQueue(run_pass)
        queue.request("timed")
        queue.request("flaky")
        await asyncio.wait_for(done.wait(), 5)
        await queue.close()
        return seen

    seen = asyncio.run(scenario())
    timed = [t for k, t in seen if k == "timed"]
    flaky = [t for k, t in seen if k == "flaky"]
    assert len(timed) == 2 and (timed[1] - timed[0]).total_seconds() >= 0.3
    assert len(flaky) == 3
    # Backoff doubles: at least 0.05 s, then at least 0.1 s (timers never fire early).
    assert (flaky[1] - flaky[0]).total_seconds() >= 0.05
    assert (flaky[2] - flaky[1]).total_seconds() >= 0.1


def test_child_watches_are_filtered_by_the_apiserver() -> None:
    """The pod/service/NetworkPolicy watches carry a label selector, the TFJob watch none;
    every watch is in each watched namespace, or in every namespace."""

    from taas_operator.apiserver.transport import Endpoint
    from taas_operator.apiserver.verbs import KubeClient
    from taas_operator.controller.controller import Controller

    assert CHILD_SELECTOR == (
        "training.kubeflow.org/operator-name=tfjob-controller,training.kubeflow.org/job-name"
    )
    kube = KubeClient(Endpoint("http://localhost"))
    watches = {
        (i.kind.plural, i.namespace, i.selector)
        for i in Controller(OperatorSettings(namespaces=["a", "b"]), kube).informers
    }
    assert watches == {
        (plural, ns, CHILD_SELECTOR if plural != "tfjobs" else "")
        for plural in ("tfjobs", "pods", "services", "networkpolicies")
        for ns in ("a", "b")
    }
    without = Controller(OperatorSettings(network_policy=False), kube)
    plurals = {i.kind.plural for i in without.informers}
    assert plurals == {"tfjobs", "pods", "services"}
    assert {i.namespace for i in Controller(OperatorSettings(), kube).informers} == {""}


def test_running_passes_are_capped_and_served_in_request_order() -> None:
    """With max_running=2, ten jobs requested together run two at a time, first come first."""

    async def scenario() -> tuple[list[int], int]:
        started: list[int] = []
        running = 0
        most = 0
        gate = asyncio.Event()

        async def run_pass(key: Hashable) -> datetime | None:
            nonlocal running, most
            assert isinstance(key, int)
            started.append(key)
            running += 1
            most = max(most, running)
            await gate.wait()
            running -= 1
            return None

        queue = WorkQueue(run_pass, max_running=2)
        for key in range(10):
            queue.request(key)
        for _ in range(5):
            await asyncio.sleep(0)
        assert started == [0, 1], "only two passes may run"
        gate.set()
        for _ in range(50):
            await asyncio.sleep(0)
        await queue.close()
        return started, most

    started, most = asyncio.run(scenario())
    assert started == list(range(10))
    assert most == 2


def test_a_pass_makes_one_event_naming_what_it_did() -> None:
    """The objects a pass changed are named in its first Normal lifecycle event (capped under
    Kubernetes' 1024 characters); Warnings, the engine's and failed calls', stay apart."""
    names = [f"job-worker-{i}" for i in range(200)]
    created = Event(type="Normal", reason="TFJobCreated", message="TFJob job is created.")
    restart = Event(type="Warning", reason="TFJobRestarting", message="restarting")
    failure = Event(type="Warning", reason="FailedCreateService", message="Error creating ...")
    done = [
        *(Done(CREATE, POD, name) for name in names),
        Done(DELETE, SERVICE, "job-ps-0"),
        Done(CREATE, POD, "job-ps-0"),
        Done(CREATE, POLICY, "job"),
    ]
    events = pass_events(done, [failure], [restart, created])
    assert events[0] is restart and events[2] is failure and len(events) == 3
    merged = events[1]
    assert (merged.type, merged.reason) == ("Normal", "TFJobCreated")
    assert len(merged.message) <= 1000
    head, pods, services, policy = merged.message.split(". ")
    assert head == "TFJob job is created"
    assert pods.startswith("Created 201 pods: job-worker-0, job-worker-1, ")
    shown = pods.split(": ", 1)[1].split(" (and ")[0].split(", ")
    assert pods.endswith(f"(and {201 - len(shown)} more)") and len(shown) > 5
    assert services == "Deleted service: job-ps-0"
    assert policy == "Created policy: job"


def test_a_pass_without_a_transition_makes_one_event_of_its_objects() -> None:
    """Kubeflow's reason for one kind (SuccessfulCreatePod), Kubernetes' for several kinds."""
    one = pass_events([Done(CREATE, POD, "job-worker-1")], [], [])
    assert [(e.reason, e.message) for e in one] == [
        ("SuccessfulCreatePod", "Created pod: job-worker-1")
    ]
    both = pass_events([Done(CREATE, POD, "a"), Done(CREATE, SERVICE, "a")], [], [])
    assert [(e.reason, e.message) for e in both] == [
        ("SuccessfulCreate", "Created pod: a. Created service: a")
    ]
    assert pass_events([], [], []) == []


def test_backoff_doubles_up_to_its_cap() -> None:
    """One formula for the work queue (1 s to 5 min) and the local kubelet (1 s to 10 s)."""
    assert [backoff_delay(n, 1.0, 10.0) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]
    assert backoff_delay(10, workqueue.BACKOFF_START, workqueue.BACKOFF_MAX) == 300


def test_kopf_watches_nothing_and_stores_nothing() -> None:
    """kopf keeps only the lifecycle, login, probe and peering: no resource handler of any
    kind, so it never watches, patches or adds finalizers to TFJobs or their children."""

    from taas_operator.apiserver.transport import Endpoint
    from taas_operator.apiserver.verbs import KubeClient
    from taas_operator.controller.controller import Controller
    from taas_operator.controller.handlers import build_registry

    registry = build_registry(
        Controller(OperatorSettings(), KubeClient(Endpoint("http://localhost")))
    )
    for handlers in (registry._watching, registry._changing, registry._spawning):
        assert handlers.get_all_handlers() == []
    assert registry._indexing.get_all_handlers() == []
    assert kopf_settings(OperatorSettings()).posting.enabled is False


def test_background_passes_wait_for_every_other() -> None:
    """A restart re-checks every listed job in the background lane: a new job requested
    meanwhile (and a listed job that gets a real event) is served before the rest."""

    async def scenario() -> list[Hashable]:
        started: list[Hashable] = []
        gate = asyncio.Event()

        async def run_pass(key: Hashable) -> datetime | None:
            started.append(key)
            await gate.wait()
            return None

        queue = WorkQueue(run_pass, max_running=1)
        for key in range(5):
            queue.request(key, background=True)
        for _ in range(5):
            await asyncio.sleep(0)
        queue.request("new")  # a new job
        queue.request(3)  # a listed job that changed: to the front lane
        queue.request(4, background=True)  # still background
        gate.set()
        for _ in range(50):
            await asyncio.sleep(0)
        await queue.close()
        return started

    assert asyncio.run(scenario()) == [0, "new", 3, 1, 2, 4]


def test_a_costly_pass_cools_its_key_down_and_requests_meanwhile_make_one_pass() -> None:
    """A pass that cost 3 ms of computing (a big job's) is followed by a cool-down of 100x as
    long; the requests that arrive meanwhile (its pods keep changing) make one pass after it.
    Another key, whose passes cost nothing, is not held back."""

    async def scenario() -> tuple[list[tuple[str, float]], float]:
        seen: list[tuple[str, float]] = []
        ended = 0.0

        async def run_pass(key: Hashable) -> datetime | None:
            nonlocal ended
            seen.append((str(key), time.monotonic()))
            ended = time.monotonic()
            return None

        costs = {"big": 0.003, "small": 0.0}
        queue = WorkQueue(run_pass, cost=lambda key: costs[str(key)])
        queue.request("big")
        await asyncio.sleep(0.05)  # the first pass is over: cooling until 0.3 s after it
        first_end = ended
        for _ in range(5):
            queue.request("big")
            await asyncio.sleep(0.01)
        queue.request("small")
        await asyncio.sleep(0.6)
        await queue.close()
        return seen, first_end

    seen, first_end = asyncio.run(scenario())
    big = [t for k, t in seen if k == "big"]
    small = [t for k, t in seen if k == "small"]
    assert len(big) == 2, seen  # five requests, one pass
    assert big[1] - first_end >= 0.3 * 0.95  # 100x the pass's cost (monotonic, timer slack)
    assert len(small) == 1 and small[0] < big[1]  # not held back by the other key
