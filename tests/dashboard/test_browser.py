"""The dashboard in a real headless browser (Debian's Chromium, driven by Playwright).

Cluster: the real apiserver and the TaaS operator; the test plays the kubelet (pod phases
through pods/status; container logs through `tests/harness/kubelet_player.py`, whose HTTPS
endpoint the real apiserver proxies `pods/log` to, as it would to a node's kubelet). Local: a
real `taas run --dashboard` whose replicas are real processes. Screenshots of the list and the
job page are saved as artifacts (see conftest.py).
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.processes import spawn, stop
from tests.dashboard.dashboard_harness import (
    EDIT_RULES,
    FORM_RULES,
    VIEW_RULES,
    dashboard,
    grant,
    signed,
)
from tests.harness.kubelet_player import KubeletPlayer
from tests.harness.operator_run import (
    Api,
    OperatorProcess,
    tfjob,
)
from tests.harness.waiting import wait

pytestmark = pytest.mark.controlplane
TFJOBS = "/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs"


def _expect() -> Any:
    from playwright.sync_api import expect

    expect.set_options(timeout=20_000)
    return expect


def _progress(admin: Api, ns: str, name: str, step: int) -> None:
    """What the operator writes from the chief's reports (status.progress: the latest loss and
    the last five values of each scalar), written directly: no TensorFlow chief runs here."""

    def loss(s: int) -> float:
        return round(2.3 * 0.9 ** (s / 10) + 0.05, 4)

    recent = range(step - 80, step + 1, 20)
    progress = {
        "percent": step * 100 // 1000,
        "percentText": f"{step * 100 // 1000}%",
        "step": step,
        "maxSteps": 1000,
        "loss": loss(step),
        "examplesPerSecond": 2450.5,
        "etaSeconds": (1000 - step) // 6,
        "eta": f"{(1000 - step) // 6}s",
        "scalars": {
            "loss": [{"step": s, "value": loss(s)} for s in recent],
            "accuracy": [
                {"step": s, "value": round(1 - 0.9 * 0.95 ** (s / 10), 4)} for s in recent
            ],
        },
        "reportTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    admin.merge_patch(f"{TFJOBS.format(ns=ns)}/{name}/status", {"status": {"progress": progress}})


def test_job_lifecycle_list_logs_and_screenshots(
    control_plane: ControlPlane,
    admin: Api,
    namespace: str,
    operator: OperatorProcess,
    page: Any,
    artifacts: Path,
    tmp_path: Path,
) -> None:
    expect = _expect()
    for name in ("resnet-sync", "bert-finetune"):
        admin.create_tfjob(
            namespace, tfjob(name, {"PS": {"replicas": 1}, "Worker": {"replicas": 2}})
        )
    manifest = tfjob("mnist-async", {"PS": {"replicas": 1}, "Worker": {"replicas": 2}})
    manifest["metadata"]["annotations"] = {"taas.dev/tensorboard": "http://127.0.0.1:6006/"}
    admin.create_tfjob(namespace, manifest)
    kubelet = KubeletPlayer(admin, tmp_path)
    try:
        with dashboard(control_plane.kubeconfig, [namespace]) as url:
            page.goto(signed(url))
            row = page.locator('tr[data-key$="/mnist-async"]')
            expect(row).to_be_visible()
            expect(row.locator(".state")).to_have_text("Created")

            pods = wait(lambda: len(admin.pods(namespace, "mnist-async")) == 3, "3 pods")
            assert pods
            for pod in ("mnist-async-ps-0", "mnist-async-worker-0", "mnist-async-worker-1"):
                kubelet.run(namespace, pod, [f"{pod}: session ready", f"{pod}: step 0"])
            expect(row.locator(".state")).to_have_text("Running")  # live, no reload
            _progress(admin, namespace, "mnist-async", 100)
            expect(row.locator(".pct")).to_have_text("10%")
            # The other two: one fails, one stays Created, so the list shows three states.
            wait(lambda: len(admin.pods(namespace, "bert-finetune")) == 3, "bert's pods")
            admin.set_pod_phase(
                namespace, "bert-finetune-worker-0", "Failed", exit_code=137, reason="OOMKilled"
            )
            bert = page.locator('tr[data-key$="/bert-finetune"] .state')
            expect(bert).to_have_text("Failed")
            page.select_option("#filter-state", "Running")
            expect(page.locator("#count")).to_have_text("1 of 3 TFJobs")
            page.select_option("#filter-state", "")
            _progress(admin, namespace, "mnist-async", 400)
            expect(row.locator(".pct")).to_have_text("40%")
            page.screenshot(path=str(artifacts / "dashboard-list.png"))

            row.locator("a").click()
            expect(page.locator("#job-state")).to_have_text("Running")
            expect(page.locator("#tensorboard")).to_have_attribute("href", "http://127.0.0.1:6006/")
            replicas = page.locator("#replicas-body tr")
            expect(replicas).to_have_count(3)
            expect(page.locator('#replicas-body tr[data-replica="worker-1"]')).to_contain_text(
                "Running"
            )
            # Logs through the apiserver, merged with taas run's prefixes, then live.
            logs = page.locator("#logs")
            expect(logs).to_contain_text("[worker-1] mnist-async-worker-1: session ready")
            expect(logs).to_contain_text("[ps-0] mnist-async-ps-0: step 0")
            kubelet.say(
                namespace, "mnist-async-worker-0", "[worker:0] step 50 global 410/1000 loss 0.3124"
            )
            expect(logs).to_contain_text(
                "[worker-0] [worker:0] step 50 global 410/1000 loss 0.3124"
            )
            for step in (500, 600, 700):  # the chart grows with each report the page sees
                _progress(admin, namespace, "mnist-async", step)
                expect(page.locator("#job-progress")).to_contain_text(f"{step} / 1000")
            expect(page.locator("#chart-note")).to_have_text("20 points")
            expect(page.locator("#chart .uplot")).to_be_visible()
            expect(page.locator("#timeline li")).to_have_count(2)  # Created, Running
            page.screenshot(path=str(artifacts / "dashboard-job.png"), full_page=True)

            kubelet.end(namespace, "mnist-async-worker-0", "Succeeded", exit_code=0)
            expect(page.locator("#job-state")).to_have_text("Succeeded")
            expect(page.locator('#replicas-body tr[data-replica="worker-0"]')).to_contain_text(
                "Succeeded"
            )
            expect(page.locator("#events-body")).to_contain_text("TFJobSucceeded")
            timeline = page.locator("#timeline li b")
            expect(timeline).to_contain_text(["Created", "Running", "Succeeded"])
            page.screenshot(path=str(artifacts / "dashboard-job-succeeded.png"), full_page=True)
    finally:
        kubelet.close()


def test_suspend_allowed_and_refused(
    control_plane: ControlPlane,
    admin: Api,
    namespace: str,
    operator: OperatorProcess,
    page: Any,
    artifacts: Path,
) -> None:
    expect = _expect()
    admin.create_tfjob(namespace, tfjob("pausable", {"Worker": {"replicas": 2}}))
    wait(lambda: len(admin.pods(namespace, "pausable")) == 2, "the job's pods")
    for pod in ("pausable-worker-0", "pausable-worker-1"):
        admin.set_pod_phase(namespace, pod, "Running")
    viewer = grant(control_plane, namespace, "viewer", VIEW_RULES)
    editor = grant(control_plane, namespace, "editor", EDIT_RULES)
    job_url = f"#/job/{namespace}/pausable"

    with dashboard(viewer, [namespace]) as url:
        page.goto(signed(url) + job_url)
        expect(page.locator("#job-state")).to_have_text("Running")
        expect(page.locator("#act-suspend")).to_be_disabled()
        note = page.locator("#perm-note")
        expect(note).to_contain_text("You may not suspend or resume or delete this job")
        expect(note).to_contain_text("viewer may not patch tfjobs.kubeflow.org")
        page.screenshot(path=str(artifacts / "dashboard-read-only.png"))
        # Even a request made by hand, past the disabled button, is refused by the apiserver.
        refused = page.evaluate(
            """async (path) => {
                const r = await fetch(path, {method: "POST",
                    headers: {"X-TaaS-Dashboard": "1"}});
                return [r.status, (await r.json()).error];
            }""",
            f"/api/jobs/{namespace}/pausable/suspend",
        )
        assert refused[0] == 403 and "forbidden" in refused[1].lower(), refused
    assert not (admin.tfjob(namespace, "pausable") or {})["spec"]["runPolicy"].get("suspend")

    with dashboard(editor, [namespace]) as url:
        page.goto(signed(url) + job_url)
        expect(page.locator("#job-state")).to_have_text("Running")
        suspend = page.locator("#act-suspend")
        expect(suspend).to_be_enabled()
        expect(page.locator("#perm-note")).to_be_hidden()
        suspend.click()
        expect(page.locator("#action-message")).to_contain_text("Suspend requested")
        expect(page.locator("#job-state")).to_have_text("Suspended")
        assert admin.tfjob(namespace, "pausable")["spec"]["runPolicy"]["suspend"] is True
        expect(page.locator("#act-resume")).to_be_visible()
        page.locator("#act-resume").click()
        expect(page.locator("#job-state")).not_to_have_text("Suspended")
        assert admin.tfjob(namespace, "pausable")["spec"]["runPolicy"]["suspend"] is False


def test_missing_job_and_refused_namespace(
    control_plane: ControlPlane, admin: Api, namespace: str, page: Any
) -> None:
    expect = _expect()
    viewer = grant(control_plane, namespace, "viewer2", VIEW_RULES)
    with dashboard(viewer, [namespace, "kube-system"]) as url:
        page.goto(signed(url))
        expect(page.locator("#notes")).to_contain_text(
            "Namespace kube-system: you may not list TFJobs there"
        )
        page.goto(signed(url) + f"#/job/{namespace}/not-there")
        expect(page.locator("#job-missing")).to_contain_text(
            f"TFJob {namespace}/not-there not found"
        )
        admin.create_tfjob(namespace, tfjob("not-there", {"Worker": {"replicas": 1}}))
        expect(page.locator("#job-name")).to_have_text("not-there")  # appears by itself
        expect(page.locator("#job-missing")).to_be_hidden()


def test_outage_is_said_and_recovered(page: Any, tmp_path: Path) -> None:
    """Own control plane: this test stops its apiserver."""
    from tests.crds import install_crd

    expect = _expect()
    with ControlPlane() as plane:
        install_crd(
            plane,
            Path(__file__).resolve().parents[2] / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml",
        )
        api = Api(plane.kubeconfig)
        api.create_tfjob("default", tfjob("before", {"Worker": {"replicas": 1}}))
        with dashboard(plane.kubeconfig, ["default"]) as url:
            page.goto(signed(url) + "#/job/default/before")
            expect(page.locator("#job-name")).to_have_text("before")
            plane.stop_apiserver()
            banner = page.locator("#banner")
            expect(banner).to_contain_text("is not answering", timeout=60_000)
            expect(page.locator("#live")).to_have_text("reconnecting")
            plane.start_apiserver()
            api.create_tfjob("default", tfjob("after", {"Worker": {"replicas": 1}}))
            expect(banner).to_be_hidden(timeout=60_000)
            page.goto(signed(url))
            expect(page.locator('tr[data-key="default/after"]')).to_be_visible()
            expect(page.locator("#live")).to_have_text("live")


def test_local_run_page_streams_logs(page: Any, artifacts: Path, tmp_path: Path) -> None:
    """`taas run --dashboard`: the same page for a job on this machine, logs as they come."""
    expect = _expect()
    job = tmp_path / "job.yaml"
    program = (
        "import os, time\n"
        "for i in range(40):\n"
        "    print(f'step {i} task {os.environ[\"TASK_INDEX\"]}', flush=True)\n"
        "    time.sleep(0.25)\n"
    )
    job.write_text(
        textwrap.dedent(f"""\
        apiVersion: kubeflow.org/v1
        kind: TFJob
        metadata: {{name: local-demo}}
        spec:
          tfReplicaSpecs:
            Worker:
              replicas: 2
              template:
                spec:
                  containers:
                  - name: tensorflow
                    image: python
                    command: [python, -c, {json.dumps(program)}]
        """)
    )
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        proc = spawn(
            [
                sys.executable,
                "-m",
                "taas_operator.cli",
                "run",
                str(job),
                "--dashboard",
                "0",
                "--quiet-table",
                "--host-network",
                "--keep-serving",
            ],
            stdout=out,
        )
    try:
        found = wait(
            lambda: re.search(r"dashboard: (http://\S+)", log.read_text()), "the dashboard URL"
        )
        url = found.group(1)  # the printed URL carries the run's token
        assert "?token=" in url
        page.goto(url)
        row = page.locator('tr[data-key="default/local-demo"]')
        expect(row.locator(".state")).to_have_text("Running")
        row.locator("a").click()
        logs = page.locator("#logs")
        expect(logs).to_contain_text("[worker-0] step 3 task 0")
        expect(logs).to_contain_text("[worker-1] step 3 task 1")
        expect(logs).to_contain_text("[worker-1] step 20 task 1")  # arriving while we look
        page.select_option("#log-replica", "worker-1")
        expect(logs).to_contain_text("[worker-1] step 0 task 1")
        expect(logs).not_to_contain_text("[worker-0]")
        expect(page.locator("#job-state")).to_have_text("Succeeded", timeout=40_000)
        expect(page.locator("#notes")).to_contain_text("the run has ended")
        expect(page.locator("#act-suspend")).to_be_disabled()
        page.screenshot(path=str(artifacts / "dashboard-local-run.png"), full_page=True)
    finally:
        stop(proc, grace=5)
    assert "TFJob local-demo Succeeded" in log.read_text()


def test_submit_form_previews_checks_and_creates(
    control_plane: ControlPlane,
    admin: Api,
    namespace: str,
    page: Any,
    artifacts: Path,
    tmp_path: Path,
) -> None:
    """Submit's form: fields typed, a program uploaded, the YAML it makes shown as they change, a
    bad field's message under it, then the TFJob and the program's ConfigMap on the apiserver;
    the pasted YAML still works in its tab."""
    expect = _expect()
    program = tmp_path / "digits_train.py"
    program.write_text("import taas\nprint('training digits')\n")
    editor = grant(control_plane, namespace, "former", FORM_RULES)
    with dashboard(editor, [namespace]) as url:
        page.goto(signed(url))
        page.locator("#submit-open").click()
        expect(page.locator("#form-pane")).to_be_visible()
        preview = page.locator("#form-yaml")
        expect(preview).to_contain_text("name: train")  # the defaults: train.py, 1 worker
        page.fill("#f-workers", "2")
        page.fill("#f-ps", "1")
        page.fill("#f-gpus", "1")
        page.fill("#f-memory", "512m")
        memory = page.locator('#form-pane [data-field="memory"]')
        expect(memory.locator(".field-error")).to_contain_text(
            "Memory '512m': is less than 1Mi ('m' means thousandths of a byte); fix: write "
            "mebibytes as Mi"
        )
        expect(memory).to_have_attribute("data-invalid", "1")
        expect(page.locator("#preview-note")).to_contain_text("fix the fields marked")
        page.screenshot(path=str(artifacts / "dashboard-submit-form-error.png"))
        page.fill("#f-memory", "1Gi")
        expect(memory.locator(".field-error")).to_have_count(0)
        page.set_input_files("#f-upload", str(program))
        expect(page.locator("#f-file-name")).to_have_value("digits_train.py")
        page.fill("#f-env", "TF_MAX_STEPS=400")
        page.fill("#f-args", "--max_steps=400")
        for text in (
            "name: digits-train",
            f"namespace: {namespace}",
            "replicas: 2",
            "nvidia.com/gpu: 1",
            "memory: 1Gi",
            "- /opt/taas/program/digits_train.py",
            "kind: ConfigMap",
            "print('training digits')",
            "TF_MAX_STEPS",
        ):
            expect(preview).to_contain_text(text)
        page.screenshot(path=str(artifacts / "dashboard-submit-form.png"))
        page.locator("#submit-send").click()
        expect(page.locator("#job-name")).to_have_text("digits-train")
        job = admin.tfjob(namespace, "digits-train")
        assert job is not None
        specs = job["spec"]["tfReplicaSpecs"]
        assert (specs["PS"]["replicas"], specs["Worker"]["replicas"]) == (1, 2)
        container = specs["Worker"]["template"]["spec"]["containers"][0]
        assert container["command"][-1] == "--max_steps=400"
        assert container["resources"]["limits"] == {"memory": "1Gi", "nvidia.com/gpu": 1}
        assert container["env"] == [
            {"name": "TF_MAX_STEPS", "value": "400"},
            {"name": "TF_CPP_MIN_LOG_LEVEL", "value": "1"},  # as taas submit sets it
        ]
        held = admin.find(f"/api/v1/namespaces/{namespace}/configmaps/digits-train-program")
        assert held is not None and held["data"] == {"digits_train.py": program.read_text()}
        assert held["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]

        # A command of the image: no program, so the name must be given.
        page.goto(signed(url))
        page.locator("#submit-open").click()
        page.check('#form-pane input[name="runs"][value="command"]')
        expect(page.locator("#f-program")).to_be_hidden()
        page.fill("#f-command", "python examples/linear_regression/linear_regression.py")
        name = page.locator('#form-pane [data-field="name"] .field-error')
        expect(name).to_have_text("Name: needed for a command; fix: e.g. train")
        page.fill("#f-name", "linreg")
        expect(name).to_have_count(0)
        expect(preview).to_contain_text("- examples/linear_regression/linear_regression.py")
        expect(preview).not_to_contain_text("kind: ConfigMap")
        page.locator("#submit-send").click()
        expect(page.locator("#job-name")).to_have_text("linreg")
        assert admin.tfjob(namespace, "linreg") is not None

        # The YAML tab: the pasted manifest, checked as taas validate checks it.
        page.goto(signed(url))
        page.locator("#submit-open").click()
        page.locator("#tab-yaml").click()
        expect(page.locator("#form-pane")).to_be_hidden()
        page.fill("#submit-yaml", json.dumps(tfjob("pasted", {"Worker": {"replicas": 1}})))
        page.locator("#submit-send").click()
        expect(page.locator("#job-name")).to_have_text("pasted")
    assert admin.tfjob(namespace, "pasted") is not None


XSS = '<img src=x onerror="window.__pwned=1">\x1b[2J<script>window.__pwned=2</script>'


def test_hostile_text_renders_as_text(
    page: Any, control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    """What held in issue 20's probe stays held: markup in annotations, env, a condition, an
    event and a progress scalar is shown as text and never runs."""
    manifest = tfjob("hostile", {"Worker": {"replicas": 1}})
    manifest["metadata"]["annotations"] = {"note": XSS, "taas.dev/tensorboard": "javascript:x()"}
    container = manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "PAYLOAD", "value": XSS}]
    admin.create_tfjob(namespace, manifest)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    condition = {
        "type": "Created",
        "status": "True",
        "reason": "X",
        "message": XSS,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    }
    admin.merge_patch(
        f"{TFJOBS.format(ns=namespace)}/hostile/status",
        {
            "status": {
                "conditions": [condition],
                "progress": {"step": 1, "scalars": {XSS[:40]: [{"step": 1, "value": 1.0}]}},
            }
        },
    )
    job = admin.tfjob(namespace, "hostile") or {}
    admin.create(
        f"/api/v1/namespaces/{namespace}/events",
        {
            "metadata": {"name": "hostile.x"},
            "involvedObject": {
                "kind": "TFJob",
                "name": "hostile",
                "namespace": namespace,
                "uid": job["metadata"]["uid"],
                "apiVersion": "kubeflow.org/v1",
            },
            "reason": "Hostile",
            "message": XSS,
            "type": "Warning",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        },
    )
    expect = _expect()
    with dashboard(control_plane.kubeconfig, [namespace]) as url:
        page.goto(signed(url) + f"#/job/{namespace}/hostile")
        expect(page.locator("#job-message")).to_contain_text("<img src=x")
        expect(page.locator("#events-body")).to_contain_text("<script>")
        assert page.evaluate("window.__pwned") is None
        assert page.locator("img[src=x]").count() == 0
        assert page.locator("#tensorboard").is_hidden()
