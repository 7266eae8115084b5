"""The dashboard server's endpoints against the real apiserver, as users with different RBAC.

No browser here (test_browser.py has it): plain HTTP to every endpoint, checking what the
apiserver holds afterwards. No operator runs: the TFJobs are created by the admin and their
status written through the status subresource where a test needs one.
"""

from __future__ import annotations

import json
import socket
import subprocess
import uuid
from typing import Any

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from tests.dashboard.dashboard_harness import (
    EDIT_RULES,
    VIEW_RULES,
    call,
    dashboard,
    grant,
    sse_events,
)
from tests.harness.operator_run import (
    Api,
    tfjob,
)
from tests.harness.waiting import wait

pytestmark = pytest.mark.controlplane


def _job(admin: Api, ns: str, name: str, **annotations: str) -> dict[str, Any]:
    manifest = tfjob(name, {"Worker": {"replicas": 2}, "PS": {"replicas": 1}})
    if annotations:
        manifest["metadata"]["annotations"] = annotations
    return admin.create_tfjob(ns, manifest)


def _user(plane: ControlPlane, ns: str, rules: list[dict[str, Any]]) -> str:
    return grant(plane, ns, f"u-{uuid.uuid4().hex[:6]}", rules)


def test_list_detail_and_missing_job(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    _job(admin, namespace, "alpha", **{"taas.dev/tensorboard": "https://tb.example.com/alpha"})
    _job(admin, namespace, "beta", **{"taas.dev/tensorboard": "javascript:alert(1)"})
    _job(admin, namespace, "gamma", **{"taas.dev/tensorboard": "true"})
    with dashboard(control_plane.kubeconfig, [namespace]) as url:
        jobs = wait(
            lambda: (
                len((call(url + "api/jobs").json or {}).get("jobs", [])) == 3
                and call(url + "api/jobs").json
            ),
            "the three jobs in the list",
        )
        rows = {j["name"]: j for j in jobs["jobs"]}
        assert rows["alpha"]["replicas"]["Worker"]["desired"] == 2
        assert rows["alpha"]["replicas"]["PS"]["desired"] == 1
        assert rows["alpha"]["state"] == "Pending"  # no operator: no condition yet
        assert rows["alpha"]["tensorboard"] == "https://tb.example.com/alpha"
        assert rows["beta"]["tensorboard"] is None  # only http(s) links reach the page
        # the operator runs gamma's: the page says the command that serves it here
        assert rows["gamma"]["tensorboard"] is None
        assert rows["gamma"]["tensorboard_command"] == f"taas tensorboard gamma -n {namespace}"
        assert rows["alpha"]["tensorboard_command"] is None

        detail = call(f"{url}api/jobs/{namespace}/alpha")
        assert detail.status == 200
        names = [r["name"] for r in detail.json["replicas"]]
        assert names == ["alpha-ps-0", "alpha-worker-0", "alpha-worker-1"]
        assert all(r["phase"] == "-" for r in detail.json["replicas"])  # no pods yet
        assert "kind: TFJob" in detail.json["yaml"]
        assert "managedFields" not in detail.json["yaml"]

        missing = call(f"{url}api/jobs/{namespace}/nope")
        assert missing.status == 404
        assert missing.json["error"] == f"TFJob {namespace}/nope not found"


def test_streams_follow_changes(control_plane: ControlPlane, admin: Api, namespace: str) -> None:
    with dashboard(control_plane.kubeconfig, [namespace]) as url:
        first = sse_events(url + "api/jobs/stream", 2)
        assert first[0][0] == "status" and first[1] == ("snapshot", [])
        _job(admin, namespace, "gamma")
        wait(lambda: call(url + "api/jobs").json["jobs"], "the watch to see the job")
        events = sse_events(url + "api/jobs/stream", 2)  # status, snapshot
        assert [e["name"] for e in events[1][1]] == ["gamma"]
        status = {
            "conditions": [
                {"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "c"},
                {"type": "Running", "status": "True", "reason": "TFJobRunning", "message": "r"},
            ],
            "replicaStatuses": {"Worker": {"active": 2}},
            "progress": {"percent": 40, "percentText": "40%", "step": 40, "maxSteps": 100},
        }
        path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/gamma/status"
        admin.merge_patch(path, {"status": status})
        detail = sse_events(f"{url}api/jobs/{namespace}/gamma/stream", 2)
        assert detail[0] == ("problem", {"problem": None})
        assert detail[1][0] == "detail"
        job = detail[1][1]["job"]
        assert job["state"] == "Running"
        assert job["replicas"]["Worker"]["active"] == 2
        assert job["progress"]["percent"] == 40 and job["progress"]["maxSteps"] == 100
        timeline = [c["type"] for c in detail[1][1]["conditions"]]
        assert timeline == ["Created", "Running"]
        missing = sse_events(f"{url}api/jobs/{namespace}/nope/stream", 2)
        assert missing[1] == ("missing", {"message": f"TFJob {namespace}/nope not found"})


def test_permissions_and_actions_follow_rbac(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    _job(admin, namespace, "delta")
    viewer = _user(control_plane, namespace, VIEW_RULES)
    editor = _user(control_plane, namespace, EDIT_RULES)
    with dashboard(viewer, [namespace]) as url:
        perms = call(f"{url}api/namespaces/{namespace}/permissions").json
        assert not perms["suspend"]["allowed"] and not perms["delete"]["allowed"]
        assert "may not patch tfjobs.kubeflow.org" in perms["suspend"]["reason"]
        refused = call(f"{url}api/jobs/{namespace}/delta/suspend", "POST")
        assert refused.status == 403
        assert 'cannot patch resource "tfjobs"' in refused.json["error"]  # kubectl's words
        assert call(f"{url}api/jobs/{namespace}/delta", "DELETE").status == 403
    assert admin.tfjob(namespace, "delta")["spec"].get("runPolicy", {}).get("suspend") is not True
    with dashboard(editor, [namespace]) as url:
        perms = call(f"{url}api/namespaces/{namespace}/permissions").json
        assert perms["suspend"]["allowed"] and perms["delete"]["allowed"]
        assert perms["create"]["allowed"]
        # Without the page's header (a cross-site form could send this): refused, nothing done.
        forged = call(f"{url}api/jobs/{namespace}/delta/suspend", "POST", action=False)
        assert forged.status == 403
        assert admin.tfjob(namespace, "delta")["spec"]["runPolicy"].get("suspend") is not True
        assert call(f"{url}api/jobs/{namespace}/delta/suspend", "POST").status == 200
        assert admin.tfjob(namespace, "delta")["spec"]["runPolicy"]["suspend"] is True
        assert call(f"{url}api/jobs/{namespace}/delta/resume", "POST").status == 200
        assert admin.tfjob(namespace, "delta")["spec"]["runPolicy"]["suspend"] is False
        assert call(f"{url}api/jobs/{namespace}/delta", "DELETE").status == 200
        wait(lambda: admin.tfjob(namespace, "delta") is None, "the job to be deleted")
    with dashboard(editor, [namespace], read_only=True) as url:
        perms = call(f"{url}api/namespaces/{namespace}/permissions").json
        assert not perms["suspend"]["allowed"] and "read-only" in perms["suspend"]["reason"]


def test_submit_validates_like_taas_validate(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    editor = _user(control_plane, namespace, EDIT_RULES)
    good = json.dumps(tfjob("epsilon", {"Worker": {"replicas": 1}}))
    bad_manifest = tfjob("zeta", {"Worker": {"replicas": 1}})
    bad_manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0][
        "args"
    ] = "--max_steps=10"
    with dashboard(editor, [namespace]) as url:
        made = call(f"{url}api/jobs?namespace={namespace}", "POST", good)
        assert made.status == 200, made.json
        assert made.json == {"namespace": namespace, "name": "epsilon"}
        assert admin.tfjob(namespace, "epsilon") is not None
        refused = call(f"{url}api/jobs?namespace={namespace}", "POST", json.dumps(bad_manifest))
        assert refused.status == 422
        assert 'The TFJob "zeta" is invalid' in refused.json["error"]
        assert "fix: make args a list" in refused.json["error"]
        assert admin.tfjob(namespace, "zeta") is None
        again = call(f"{url}api/jobs?namespace={namespace}", "POST", good)
        assert again.status == 409 and "already exists" in again.json["error"]
        broken = call(f"{url}api/jobs?namespace={namespace}", "POST", "kind: [")
        assert broken.status == 422 and "invalid YAML" in broken.json["error"]


def test_namespace_the_user_may_not_read(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    other = f"t-{uuid.uuid4().hex[:10]}"
    control_plane.kubectl("create", "namespace", other)
    _job(admin, namespace, "eta")
    _job(admin, other, "theta")
    viewer = _user(control_plane, namespace, VIEW_RULES)
    with dashboard(viewer, [namespace, other]) as url:
        answer = wait(
            lambda: (lambda a: a if a["status"]["notes"] and a["jobs"] else None)(
                call(url + "api/jobs").json
            ),
            "the refused namespace to be named",
        )
        assert [j["name"] for j in answer["jobs"]] == ["eta"]
        note = answer["status"]["notes"][0]
        assert note.startswith(f"Namespace {other}: you may not list TFJobs there")
        assert 'cannot list resource "tfjobs"' in note
        refused = call(f"{url}api/jobs/{other}/theta")
        assert refused.status == 503
        assert f"You may not read this TFJob in namespace {other}" in refused.json["error"]
    with dashboard(viewer) as url:  # no -n: not allowed everywhere, so the context's namespace
        notes = wait(lambda: call(url + "api/jobs").json["status"]["notes"], "a note")
        assert "You may not list TFJobs in every namespace" in notes[0]
    control_plane.kubectl("delete", "namespace", other, "--wait=false", check=False)


def test_guards(control_plane: ControlPlane) -> None:
    with dashboard(control_plane.kubeconfig, ["default"]) as url:
        page = call(url)
        assert page.status == 200 and b"TaaS" in page.raw
        assert "script-src 'self'" in page.headers["Content-Security-Policy"]
        assert call(url + "static/uPlot.iife.min.js").status == 200
        # DNS rebinding: a foreign Host on a loopback server is refused.
        rebound = call(url + "api/jobs", headers={"Host": "evil.example.com"})
        assert rebound.status == 421
        info = call(url + "api/info").json
        assert info["mode"] == "cluster" and info["readOnly"] is False


def test_cli_bad_input_exits_2(control_plane: ControlPlane, tmp_path: Any) -> None:
    missing = subprocess.run(
        ["taas", "dashboard", "--kubeconfig", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: ") and "does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = subprocess.run(
            ["taas", "dashboard", "--kubeconfig", control_plane.kubeconfig, "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert busy.returncode == 2
    assert f"--port {port}: cannot listen on 127.0.0.1:{port}" in busy.stderr
    assert "fix: choose another --port" in busy.stderr
