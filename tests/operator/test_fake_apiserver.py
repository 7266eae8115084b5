"""The in-memory apiserver (`tests.harness.fakeapi`) against the real one: every case runs on
both through the same interface (`FakeTransport`, and the operator's real `Transport`), so a
semantic the fast tier relies on that the fake gets wrong fails here. The fake's own extras
(410 Gone after a compaction) are checked on the fake alone.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest

from taas_operator.apiserver import credentials
from taas_operator.apiserver.transport import Transport
from tests.harness.fakeapi import FakeTransport, Store

Server = Any  # FakeTransport or Transport: call(), stream(), close()
TFJOBS = "/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs"
PODS = "/api/v1/namespaces/{ns}/pods"
POLICIES = "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
MERGE = "application/merge-patch+json"
_POD_SPEC = {"containers": [{"name": "tensorflow", "image": "example.com/trainer:1"}]}
_JOB_SPEC = {"tfReplicaSpecs": {"Worker": {"template": {"spec": _POD_SPEC}}}}


@pytest.fixture(
    params=[
        pytest.param("fake", marks=pytest.mark.fast),
        pytest.param("real", marks=pytest.mark.controlplane),
    ]
)
def run(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """`run(scenario)`: `await scenario(server, namespace)` on a fresh namespace of either."""
    if request.param == "real":
        request.getfixturevalue("tfjob_crd")
        kubeconfig = request.getfixturevalue("control_plane").kubeconfig

        def server() -> Server:
            return Transport(credentials.load(kubeconfig).endpoint, 4)
    else:
        store = Store()

        def server() -> Server:
            return FakeTransport(store)

    def run(scenario: Callable[[Server, str], Awaitable[None]]) -> None:
        async def main() -> None:
            api = server()
            ns = f"fake-{uuid.uuid4().hex[:8]}"
            try:
                status, _ = await api.call("POST", "/api/v1/namespaces", None,
                                           {"metadata": {"name": ns}})  # fmt: skip
                assert status == 201
                await scenario(api, ns)
            finally:
                await api.close()

        asyncio.run(main())

    yield run


async def ok(api: Server, *args: Any, **kwargs: Any) -> Any:
    status, data = await api.call(*args, **kwargs)
    assert 200 <= status < 300, (status, data)
    return data


def job(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": name, **meta}, "spec": _JOB_SPEC}  # fmt: skip


def pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": _POD_SPEC}


def test_create_get_and_the_errors_of_names(run: Callable[..., None]) -> None:
    async def scenario(api: Server, ns: str) -> None:
        made = await ok(api, "POST", TFJOBS.format(ns=ns), None, job("a"))
        assert made["metadata"]["uid"] and int(made["metadata"]["resourceVersion"]) > 0
        assert made["metadata"]["generation"] == 1
        status, data = await api.call("POST", TFJOBS.format(ns=ns), None, job("a"))
        assert (status, data["reason"]) == (409, "AlreadyExists")
        status, data = await api.call("GET", TFJOBS.format(ns=ns) + "/b")
        assert (status, data["reason"]) == (404, "NotFound")
        status, _ = await api.call("POST", TFJOBS.format(ns="no-such-ns"), None, job("a"))
        assert status == 404
        got = await ok(api, "GET", TFJOBS.format(ns=ns) + "/a")
        assert got["metadata"]["uid"] == made["metadata"]["uid"]

    run(scenario)


def test_versions_conflicts_generation_and_the_status_subresource(
    run: Callable[..., None],
) -> None:
    async def scenario(api: Server, ns: str) -> None:
        path = TFJOBS.format(ns=ns) + "/a"
        made = await ok(api, "POST", TFJOBS.format(ns=ns), None, job("a"))
        status_body = {**made, "status": {"conditions": []}, "spec": {"ignored": True}}
        written = await ok(api, "PUT", path + "/status", None, status_body)
        assert written["status"] == {"conditions": []} and written["spec"] == made["spec"]
        assert written["metadata"]["generation"] == 1
        assert int(written["metadata"]["resourceVersion"]) > int(
            made["metadata"]["resourceVersion"]
        )
        status, data = await api.call("PUT", path + "/status", None, status_body)  # stale
        assert (status, data["reason"]) == (409, "Conflict")
        unversioned = {**written, "metadata": {"name": "a", "namespace": ns}}
        status, _ = await api.call("PUT", path, None, unversioned)
        assert status == 422  # a custom resource's update needs a resourceVersion
        changed = {**written, "spec": {**made["spec"], "runPolicy": {"suspend": True}},
                   "status": {"startTime": "2025-01-01T00:00:00Z"}}  # fmt: skip
        updated = await ok(api, "PUT", path, None, changed)
        assert updated["metadata"]["generation"] == 2
        assert updated["status"] == {"conditions": []}  # the main resource ignores status
        labelled = await ok(api, "PATCH", path, None, {"metadata": {"labels": {"x": "y"}}},
                            content_type=MERGE)  # fmt: skip
        assert labelled["metadata"]["generation"] == 2  # metadata is not spec
        again = await ok(api, "PATCH", path, None, {"metadata": {"labels": {"x": "y"}}},
                         content_type=MERGE)  # fmt: skip
        assert again["metadata"]["resourceVersion"] == labelled["metadata"]["resourceVersion"]

    run(scenario)


def test_uid_preconditions_and_patch_types(run: Callable[..., None]) -> None:
    async def scenario(api: Server, ns: str) -> None:
        path = TFJOBS.format(ns=ns) + "/a"
        made = await ok(api, "POST", TFJOBS.format(ns=ns), None, job("a"))
        other = "00000000-0000-0000-0000-000000000001"
        status, data = await api.call(
            "PATCH", path, None, {"metadata": {"uid": other}}, content_type=MERGE
        )
        assert status == 422 and "metadata.uid: Invalid value" in data["message"]
        status, _ = await api.call(
            "PATCH", path, None, {"metadata": {"labels": {"a": "b"}}},
            content_type="application/strategic-merge-patch+json",
        )  # fmt: skip
        assert status == 415  # a custom resource takes no strategic merge
        spec = {**_JOB_SPEC, "successPolicy": "AllWorkers"}
        replaced = await ok(
            api, "PATCH", path, None,
            [{"op": "replace", "path": "/metadata/uid", "value": made["metadata"]["uid"]},
             {"op": "replace", "path": "/spec", "value": spec}],
            content_type="application/json-patch+json",
        )  # fmt: skip
        assert replaced["spec"]["successPolicy"] == "AllWorkers"
        status, data = await api.call("DELETE", path, None, {"preconditions": {"uid": other}})
        assert (status, data["reason"]) == (409, "Conflict")
        await ok(api, "DELETE", path, None, {"preconditions": {"uid": made["metadata"]["uid"]}})
        status, _ = await api.call("GET", path)
        assert status == 404

    run(scenario)


def test_finalizers_hold_a_deletion(run: Callable[..., None]) -> None:
    async def scenario(api: Server, ns: str) -> None:
        path = TFJOBS.format(ns=ns) + "/a"
        await ok(api, "POST", TFJOBS.format(ns=ns), None,
                 job("a", finalizers=["example.com/hold"]))  # fmt: skip
        held = await ok(api, "DELETE", path)
        assert held["metadata"]["deletionTimestamp"]
        assert (await ok(api, "GET", path))["metadata"]["deletionTimestamp"]
        await ok(api, "PATCH", path, None, {"metadata": {"finalizers": None}},
                 content_type=MERGE)  # fmt: skip
        status, _ = await api.call("GET", path)
        assert status == 404

    run(scenario)


def test_lists_select_and_page_from_one_snapshot(run: Callable[..., None]) -> None:
    async def scenario(api: Server, ns: str) -> None:
        for i in range(5):
            labels = {"job": "j", "index": str(i)} if i != 2 else {"job": "k"}
            await ok(api, "POST", PODS.format(ns=ns), None, pod(f"p{i}", labels))
        query = {"labelSelector": "job=j,index", "limit": "2"}
        first = await ok(api, "GET", PODS.format(ns=ns), query)
        assert [p["metadata"]["name"] for p in first["items"]] == ["p0", "p1"]
        assert first["items"][0]["status"]["phase"] == "Pending"
        await ok(api, "DELETE", PODS.format(ns=ns) + "/p4", None, {"gracePeriodSeconds": 0})
        rest = await ok(api, "GET", PODS.format(ns=ns),
                        {**query, "continue": first["metadata"]["continue"]})  # fmt: skip
        assert [p["metadata"]["name"] for p in rest["items"]] == ["p3", "p4"]  # the snapshot
        assert not rest["metadata"].get("continue")
        found = await ok(api, "GET", PODS.format(ns=ns), {"labelSelector": "job in (k),!index"})
        assert [p["metadata"]["name"] for p in found["items"]] == ["p2"]
        named = await ok(api, "GET", PODS.format(ns=ns), {"fieldSelector": "metadata.name=p1"})
        assert [p["metadata"]["name"] for p in named["items"]] == ["p1"]

    run(scenario)


def test_a_watch_from_a_version_sees_what_followed(run: Callable[..., None]) -> None:
    async def scenario(api: Server, ns: str) -> None:
        base = PODS.format(ns=ns)
        await ok(api, "POST", base, None, pod("p0", {"job": "j"}))
        listed = await ok(api, "GET", base, {"labelSelector": "job=j"})
        version = listed["metadata"]["resourceVersion"]
        await ok(api, "POST", base, None, pod("p1", {"job": "j"}))
        await ok(api, "PATCH", base + "/p0/status", None, {"status": {"phase": "Running"}},
                 content_type=MERGE)  # fmt: skip
        await ok(api, "PATCH", base + "/p1", None, {"metadata": {"labels": {"job": "other"}}},
                 content_type=MERGE)  # fmt: skip
        await ok(api, "DELETE", base + "/p0", None, {"gracePeriodSeconds": 0})
        query = {"watch": "1", "resourceVersion": version, "labelSelector": "job=j",
                 "allowWatchBookmarks": "true", "timeoutSeconds": "1"}  # fmt: skip
        events = [(e["type"], e["object"]["metadata"].get("name")) async for e in
                  _stream(api, base, query)]  # fmt: skip
        assert [e for e in events if e[0] != "BOOKMARK"] == [
            ("ADDED", "p1"), ("MODIFIED", "p0"), ("DELETED", "p1"),
            ("MODIFIED", "p0"), ("DELETED", "p0"),  # a pod's deletion: marked, then gone
        ]  # fmt: skip

    run(scenario)


async def _stream(api: Server, path: str, query: dict[str, str]) -> AsyncIterator[Any]:
    async for event in api.stream(path, query):
        yield event


def test_defaults_the_operators_comparisons_see(run: Callable[..., None]) -> None:
    async def scenario(api: Server, ns: str) -> None:
        policy = await ok(api, "POST", POLICIES.format(ns=ns), None, {
            "metadata": {"name": "np"},
            "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 2222}]}]},
        })  # fmt: skip
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        assert policy["spec"]["ingress"][0]["ports"][0]["protocol"] == "TCP"
        service = await ok(api, "POST", f"/api/v1/namespaces/{ns}/services", None, {
            "metadata": {"name": "s"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]},
        })  # fmt: skip
        assert service["spec"]["ports"][0] == {"port": 80, "protocol": "TCP", "targetPort": 80}
        assert service["spec"]["type"] == "ClusterIP"

    run(scenario)


@pytest.mark.fast
def test_the_fake_answers_410_gone_after_a_compaction() -> None:
    async def scenario() -> list[Any]:
        store = Store()
        api = FakeTransport(store)
        await ok(api, "POST", "/api/v1/namespaces", None, {"metadata": {"name": "n"}})
        listed = await ok(api, "GET", PODS.format(ns="n"))
        await ok(api, "POST", PODS.format(ns="n"), None, pod("p", {}))
        store.compact()
        query = {"watch": "1", "resourceVersion": listed["metadata"]["resourceVersion"],
                 "timeoutSeconds": "1"}  # fmt: skip
        return [e async for e in _stream(api, PODS.format(ns="n"), query)]

    events = asyncio.run(scenario())
    assert [(e["type"], e["object"]["code"]) for e in events] == [("ERROR", 410)]
