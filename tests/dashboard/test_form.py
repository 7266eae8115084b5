"""The Submit form's endpoints (POST /api/jobs/preview, /api/jobs/form) against the real
apiserver: what the fields make (the same TFJob and ConfigMap as `taas submit train.py`), each
bad field a 422 naming it, and the YAML submit's guards in front of both. No operator runs:
what is checked is what the apiserver holds.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import yaml

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.client.programoptions import ProgramOptions
from taas_operator.client.programs import Program, dump_yaml, program_job
from taas_operator.dashboard.form import FORM_NAMES
from tests.dashboard.dashboard_harness import (
    EDIT_RULES,
    FORM_RULES,
    VIEW_RULES,
    Answer,
    call,
    dashboard,
    grant,
)
from tests.harness.operator_run import Api

pytestmark = pytest.mark.controlplane
PROGRAM = "import os\nprint('hello from', os.environ['TF_CONFIG'])\n"
FIELDS: dict[str, Any] = {
    "name": "",
    "workers": "2",
    "ps": "1",
    "chief": True,
    "gpus_per_worker": "1",
    "image": "registry.example.com/team/trainer:1",
    "cpu": "2",
    "memory": "4Gi",
    "env": "TF_MAX_STEPS=400\nGREETING=hello world\n",
    "runs": "program",
    "file_name": "my_train.py",
    "program": PROGRAM,
    "args": "--max_steps=400 'two words'",
    "command": "",
}


def _user(plane: ControlPlane, ns: str, rules: list[dict[str, Any]]) -> str:
    return grant(plane, ns, f"f-{uuid.uuid4().hex[:6]}", rules)


def _post(url: str, path: str, ns: str, fields: Any, **how: Any) -> Answer:
    body = fields if isinstance(fields, str) else json.dumps(fields)
    return call(f"{url}api/jobs/{path}?namespace={ns}", "POST", body, **how)


def _config_map(admin: Api, ns: str, name: str) -> dict[str, Any] | None:
    return admin.find(f"/api/v1/namespaces/{ns}/configmaps/{name}")


def test_the_form_makes_what_taas_submit_makes(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    editor = _user(control_plane, namespace, FORM_RULES)
    options = ProgramOptions(
        workers=2,
        ps=1,
        chief=True,
        gpus_per_worker=1,
        image="registry.example.com/team/trainer:1",
        cpu="2",
        memory="4Gi",
        env={"TF_MAX_STEPS": "400", "GREETING": "hello world"},
        args=("--max_steps=400", "two words"),
    )
    expected = program_job(Program("my_train.py", PROGRAM), options, FORM_NAMES, namespace)
    with dashboard(editor, [namespace]) as url:
        preview = _post(url, "preview", namespace, FIELDS)
        assert preview.status == 200, preview.json
        assert preview.json["yaml"] == dump_yaml(expected)  # client.programs' own builder
        assert preview.json["namespace"] == namespace
        [tfjob, config_map] = list(yaml.safe_load_all(preview.json["yaml"]))
        specs = tfjob["spec"]["tfReplicaSpecs"]
        assert {t: s["replicas"] for t, s in specs.items()} == {"Chief": 1, "PS": 1, "Worker": 2}
        container = specs["Worker"]["template"]["spec"]["containers"][0]
        assert container["command"] == [
            "python",
            "/opt/taas/program/my_train.py",
            "--max_steps=400",
            "two words",
        ]
        assert container["resources"]["limits"] == {
            "cpu": "2",
            "memory": "4Gi",
            "nvidia.com/gpu": 1,
        }
        assert config_map["data"] == {"my_train.py": PROGRAM}
        assert admin.tfjob(namespace, "my-train") is None  # a preview sends nothing

        made = _post(url, "form", namespace, FIELDS)
        assert made.status == 200, made.json
        assert made.json == {"namespace": namespace, "name": "my-train"}
    job = admin.tfjob(namespace, "my-train")
    assert job is not None
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2
    env = worker["template"]["spec"]["containers"][0]["env"]
    assert {"name": "GREETING", "value": "hello world"} in env
    held = _config_map(admin, namespace, "my-train-program")
    assert held is not None and held["data"] == {"my_train.py": PROGRAM}
    [owner] = held["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "TFJob",
        "my-train",
        job["metadata"]["uid"],
    )


def test_a_command_of_the_image(control_plane: ControlPlane, admin: Api, namespace: str) -> None:
    editor = _user(control_plane, namespace, EDIT_RULES)  # no ConfigMap: no right on them needed
    fields = {
        "name": "linreg",
        "workers": 3,
        "runs": "command",
        "command": "python run.py -x 'a b'",
    }
    with dashboard(editor, [namespace]) as url:
        made = _post(url, "form", namespace, fields)
        assert made.status == 200, made.json
    job = admin.tfjob(namespace, "linreg")
    assert job is not None
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 3
    container = worker["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", "run.py", "-x", "a b"]
    assert "volumeMounts" not in container
    assert _config_map(admin, namespace, "linreg-program") is None


BAD = [
    ({"memory": "512m"}, "memory", "Memory '512m': is less than 1Mi"),
    ({"workers": "two"}, "workers", "Workers 'two': must be a whole number from 0 to 5000"),
    ({"gpus_per_worker": "65"}, "gpus_per_worker", "GPUs per worker 65: must be a whole number"),
    ({"image": "a b"}, "image", "Image 'a b': must be an image reference without spaces"),
    ({"env": "TF_CONFIG={}"}, "env", "Env TF_CONFIG: TaaS sets TF_CONFIG"),
    ({"env": "JUST_A_NAME"}, "env", "not NAME=VALUE; fix: e.g. TF_MAX_STEPS=400"),
    ({"file_name": "my train.py"}, "file_name", "cannot be a ConfigMap key"),
    ({"name": "Bad_Name"}, "name", "Name 'Bad_Name' cannot name the TFJob"),
    ({"args": "--x 'open"}, "args", "Arguments: No closing quotation"),
    (
        {"runs": "command", "command": "python x.py", "name": ""},
        "name",
        "Name: needed for a command",
    ),
    ({"runs": "command", "name": "c"}, "command", "Command: empty"),
    ({"workers": "0", "chief": False}, "workers", "Workers: no replica would train"),
    ({"colour": "red"}, "colour", "colour: no such field of the form"),
    ({"chief": "perhaps"}, "chief", "Chief: "),
]


def test_each_bad_field_is_named(control_plane: ControlPlane, admin: Api, namespace: str) -> None:
    """Each of BAD, previewed and submitted: 422, the problem under its field, nothing made."""
    editor = _user(control_plane, namespace, FORM_RULES)
    with dashboard(editor, [namespace]) as url:
        for change, field, message in BAD:
            fields = {**FIELDS, "name": "bad", **change}
            for path in ("preview", "form"):
                answer = _post(url, path, namespace, fields)
                assert answer.status == 422, (change, path, answer.json)
                named = [p["message"] for p in answer.json["problems"] if p["field"] == field]
                assert named and message in named[0], (change, answer.json)
                assert message in answer.json["error"]
        # An empty program: the form as it opens previews, but is not sent.
        empty = {**FIELDS, "name": "empty", "program": " \n"}
        assert _post(url, "preview", namespace, empty).status == 200
        refused = _post(url, "form", namespace, empty)
        assert refused.status == 422
        assert refused.json["problems"] == [
            {"field": "program", "message": "Program: empty; fix: paste it, or upload its .py file"}
        ]
    for name in ("bad", "c", "empty"):
        assert admin.tfjob(namespace, name) is None


def test_guarded_as_the_yaml_submit(
    control_plane: ControlPlane, admin: Api, namespace: str
) -> None:
    viewer = _user(control_plane, namespace, VIEW_RULES)
    editor = _user(control_plane, namespace, EDIT_RULES)  # tfjobs, but no ConfigMaps
    fields = {**FIELDS, "name": "guarded"}
    with dashboard(viewer, [namespace]) as url:
        for path in ("preview", "form"):
            # RBAC is asked before the body is read: not even JSON, still the 403.
            refused = _post(url, path, namespace, "not json")
            assert refused.status == 403, refused.json
            assert "may not create tfjobs.kubeflow.org" in refused.json["error"]
    with dashboard(editor, [namespace]) as url:
        for path in ("preview", "form"):
            forged = _post(url, path, namespace, fields, action=False)
            assert forged.status == 403 and "X-TaaS-Dashboard" in forged.json["error"]
            assert _post(url, path, namespace, fields, token=False).status == 401
            walk = _post(url, path, "..%2Fkube-system", fields)
            assert walk.status == 400, walk.json
            big = _post(url, path, namespace, "x" * (2 << 20))
            assert big.status == 413 and "larger than 1 MiB" in big.json["error"]
            broken = _post(url, path, namespace, "{")
            assert broken.status == 422 and "not JSON" in broken.json["error"]
        assert admin.tfjob(namespace, "guarded") is None
        # The ConfigMap comes first, refused by RBAC: no TFJob is made.
        refused = _post(url, "form", namespace, fields)
        assert refused.status == 403, refused.json
        assert 'cannot create resource "configmaps"' in refused.json["error"]
        assert admin.tfjob(namespace, "guarded") is None
    with dashboard(editor, [namespace], read_only=True) as url:
        for path in ("preview", "form"):
            answer = _post(url, path, namespace, fields)
            assert answer.status == 403 and "read-only" in answer.json["error"]
