"""The simulated-cluster benches' own judgements (bench.scale, bench.scheduling), without a
cluster: two pods of one replica Running at once are found, a replica replaced only after its
old pod was given up is not; the nodes lost are PS 0's first; goals compare within one run; the
GPUs a queue's pods held at once are counted from the watch's events (an end and a start at the
same event do not overlap), and a pod that ends and runs again is found; a watch cut and resumed
is a note, a watch that listed again an error."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import aiohttp
import pytest

from bench.harness.clock import PodTimes, _Sink, _stamp, _started, record_pod
from bench.scale.load import _stamped_starts
from bench.scale.report import goals
from bench.scale.results import ScaleResult, percentile
from bench.scale.silent_nodes import _chosen_nodes, duplicates
from bench.scheduling.gangs import pods_held

pytestmark = pytest.mark.fast


def _pod(name: str, uid: str, running: float, **moments: float) -> PodTimes:
    replica_type = "ps" if "-ps-" in name else "worker"
    return PodTimes(
        name=name,
        uid=uid,
        job="j",
        replica_type=replica_type,
        seen=running - 1,
        running=running,
        node=moments.pop("node", None),  # type: ignore[arg-type]
        **moments,
    )


def test_a_replacement_after_its_old_pod_was_given_up_is_no_duplicate() -> None:
    pods = {
        "a": _pod("j-worker-1", "a", 10.0, deleting=20.0, gone=25.0),
        "b": _pod("j-worker-1", "b", 26.0),
        "c": _pod("j-worker-2", "c", 10.0),
    }
    assert duplicates(pods, "j") == 0


def test_two_pods_of_one_replica_running_at_once_are_a_duplicate() -> None:
    pods = {
        "a": _pod("j-worker-1", "a", 10.0),  # never given up
        "b": _pod("j-worker-1", "b", 26.0),
        "c": _pod("j-worker-2", "c", 10.0, ended=30.0),
        "d": _pod("j-worker-2", "d", 29.0),  # started before c ended
    }
    assert duplicates(pods, "j") == 2


def test_the_lost_nodes_are_ps_0s_first_then_the_workers() -> None:
    live = {
        p.name: p
        for p in (
            PodTimes(name="j-worker-0", uid="1", job="j", replica_type="worker", seen=0, node="n1"),
            PodTimes(name="j-ps-0", uid="2", job="j", replica_type="ps", seen=0, node="n7"),
            PodTimes(name="j-worker-1", uid="3", job="j", replica_type="worker", seen=0, node="n7"),
            PodTimes(name="j-worker-2", uid="4", job="j", replica_type="worker", seen=0, node="n2"),
        )
    }
    assert _chosen_nodes(live, 2) == ["n7", "n1"]


def test_percentile_and_goals_within_one_run() -> None:
    assert percentile([float(i) for i in range(1, 101)], 0.99) == 99.0
    assert percentile([3.0], 0.5) == 3.0
    taas = ScaleResult(controller="taas", scenario="e", pods=100, all_running_s=10.0)
    top = ScaleResult(controller="kubeflow", scenario="e", pods=100, all_running_s=40.0)
    floor = ScaleResult(controller="floor", scenario="e", pods=100, all_running_s=5.0)
    text = goals([taas, top, floor])
    assert "(e) all Running, TaaS/t-op: 0.25x (goal <= 0.5x): met" in text
    assert "(e) all Running, TaaS/floor: 2.00x (goal <= 1.5x): NOT met" in text


def test_pod_start_by_stamps_waits_for_every_container_and_reads_whole_seconds() -> None:
    running = {"state": {"running": {"startedAt": "2026-11-26T23:11:53Z"}}}
    waiting = {"state": {"waiting": {"reason": "ContainerCreating"}}}
    assert _started({"status": {"containerStatuses": [running, waiting]}}) is None
    later = {"state": {"running": {"startedAt": "2026-11-26T23:11:55Z"}}}
    started = _started({"status": {"containerStatuses": [running, later]}})
    created = _stamp("2026-11-26T23:11:48Z")
    assert started is not None and created is not None
    assert started - created == 7.0
    assert _stamp("not a time") is None and _stamp(None) is None
    pods = {
        "a": _pod("j-worker-0", "a", 10.0, created_stamp=100.0, started_stamp=103.0),
        "b": _pod("j-worker-1", "b", 10.0, created_stamp=100.0),  # not started by its stamps
    }
    assert _stamped_starts(pods, {"j"}) == [3.0]
    assert _stamped_starts(pods, {"other"}) == []


def _held(name: str, ns: str, placed: float | None, ended: float | None) -> PodTimes:
    pod = PodTimes(name=name, uid=f"{ns}/{name}", job="j", replica_type="worker", seen=0.0)
    pod.namespace, pod.node, pod.scheduled, pod.ended = ns, "n1", placed, ended
    return pod


def test_the_gpus_a_queue_held_at_once_come_from_the_watchs_order() -> None:
    pods = [
        _held("a", "q0", 1.0, 5.0),
        _held("b", "q0", 2.0, 6.0),
        _held("c", "q0", 5.0, 9.0),  # starts at the event a ended: not three at once
        _held("d", "q1", 1.0, 2.0),
        _held("e", "other", 0.0, 10.0),  # not a queue's namespace
    ]
    held = pods_held(pods, {"q0": 0, "q1": 1})
    assert held.peaks == {0: 2, 1: 1}
    assert held.problems == []
    assert [i["pod"] for i in held.intervals] == ["a", "b", "c", "d"]


def test_a_pod_never_ended_is_a_problem_not_a_count() -> None:
    held = pods_held([_held("a", "q0", 1.0, None), _held("b", "q0", 2.0, 3.0)], {"q0": 0})
    assert held.peaks == {0: 1}
    assert held.problems == ["q0/a never placed or never ended"]


def test_a_pod_seen_running_after_it_ended_is_reported() -> None:
    pods: dict[str, PodTimes] = {}

    def event(phase: str, now: float) -> None:
        meta = {"name": "j-worker-0", "namespace": "q0", "uid": "u1"}
        pod = {"metadata": meta, "spec": {"nodeName": "n1"}, "status": {"phase": phase}}
        record_pod(pods, "MODIFIED", pod, now)

    event("Running", 1.0)
    event("Succeeded", 2.0)
    assert pods["u1"].ended == 2.0 and pods["u1"].reopened is None
    event("Running", 3.0)
    assert pods["u1"].reopened == 3.0
    held = pods_held(pods.values(), {"q0": 0})
    assert held.problems == ["q0/j-worker-0 was seen running again after it ended"]


def test_the_clock_notes_a_cut_watch_but_counts_a_new_list_as_an_error() -> None:
    clock = SimpleNamespace(errors=[], resumed=[], synced=threading.Semaphore(0))
    sink = _Sink(clock, lambda *_: None)  # type: ignore[arg-type]
    sink.listed()  # the first list: the clock has synced
    assert clock.synced.acquire(blocking=False) and not clock.errors
    sink.failed(aiohttp.ServerDisconnectedError(), 1.0)  # cut: the loop goes on from its version
    assert len(clock.resumed) == 1 and not clock.errors
    sink.listed()  # listed again with no error before it: a 410 Gone
    assert clock.errors == ["listed again (410 Gone): a change in the gap may be missed"]
    sink.failed(ValueError("an undecodable event"), 1.0)
    assert clock.errors[-1] == "ValueError: an undecodable event"
