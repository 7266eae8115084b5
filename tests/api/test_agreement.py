"""`kubectl apply --dry-run=server` on a real kube-apiserver with the TaaS CRD and `taas validate`
answer every case of the table (tests/harness/api_agreement.py) alike: both accept, or both refuse
and name the same fields, each of `taas validate`'s messages being the apiserver's for that field.

The apiserver's answer is what kubectl prints with its default strict field validation (it
stops at unknown fields) together with what it prints with `--validate=warn` (the schema errors
behind them): `taas validate` reports both at once. Nothing is mocked.
"""

from __future__ import annotations

import copy
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taas_operator.cli import main
from tests.crds import install_crd
from tests.harness.api_agreement import CASES, FULL_TEMPLATE, Case, nodes

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml"
_UNKNOWN = re.compile(r'unknown field "([^"]+)"')
_NOT_SET = re.compile(r"\b(apiVersion|kind) not set\b")


class Answer(NamedTuple):
    accepted: bool
    errors: dict[str, list[str]]  # field path -> messages
    text: str


@pytest.fixture(scope="module")
def plane_ns(control_plane: Any) -> tuple[Any, str]:
    """The CRD installed and Established, and a namespace for the dry runs."""
    install_crd(control_plane, CRD)
    control_plane.kubectl("create", "namespace", "agreement", check=False)
    return control_plane, "agreement"


def _text(case: Case) -> str:
    return case.manifest if isinstance(case.manifest, str) else json.dumps(case.manifest)


def _parse(output: str) -> dict[str, list[str]]:
    """`path -> messages` from kubectl's or taas's error text."""
    errors: dict[str, list[str]] = defaultdict(list)
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("* "):
            line = line[2:]
        elif " is invalid: " in line:  # kubectl's form for a single error
            line = line.split(" is invalid: ", 1)[1]
        else:
            line = ""
        if line and ": " in line and not line.startswith("<nil>"):
            path, message = line.split(": ", 1)
            errors[path].append(message)
    for path in _UNKNOWN.findall(output):
        if f'unknown field "{path}"' not in " ".join(errors.get(path, [])):
            errors[path].append(f'unknown field "{path}"')
    if not errors:
        for name in _NOT_SET.findall(output):
            errors[name].append(f"{name} not set")
    return dict(errors)


def _kubectl(plane: Any, namespace: str, text: str) -> Answer:
    runs = [
        plane.kubectl(
            "apply", "--dry-run=server", *extra, "-n", namespace, "-f", "-", input=text,
            check=False,
        )
        for extra in ((), ("--validate=warn",))
    ]  # fmt: skip
    output = "\n".join(r.stderr for r in runs)
    errors: dict[str, list[str]] = defaultdict(list)
    for run in runs:
        for path, found in _parse(run.stderr).items():
            errors[path] += [m for m in found if m not in errors[path]]
    return Answer(runs[0].returncode == 0, dict(errors), output)


def _taas(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Answer:
    file = tmp_path / "job.yaml"
    file.write_text(text)
    code = main(["validate", str(file)])
    output = capsys.readouterr().err
    assert code in (0, 2), output
    return Answer(code == 0, _parse(output), output)


_TEMPLATE_FIELD = re.compile(r"^spec\.tfReplicaSpecs(?:\.|\[)([^.\]]+)\]?\.template\.(spec\..+)$")


def _pod_refuses(plane: Any, namespace: str, text: str, path: str, message: str) -> bool:
    """Whether pod validation (a Pod of that replica's template, `kubectl create
    --dry-run=server`) refuses the field at `path` with `message`, as the operator's pod
    creation would: `taas validate` checks pod enums the CRD cannot hold."""
    found = _TEMPLATE_FIELD.match(path)
    if found is None:
        return False
    replica, field = found.groups()
    template = json.loads(text)["spec"]["tfReplicaSpecs"][replica]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "enum-check"}, **template}
    pod["metadata"] = {"name": "enum-check"}
    run = plane.kubectl(
        "create", "--dry-run=server", "-n", namespace, "-f", "-", input=json.dumps(pod),
        check=False,
    )  # fmt: skip
    said = message.split(": supported values")[0]
    return run.returncode != 0 and field in run.stderr and said in run.stderr


def _pod_only(ours: Answer, server: Answer, plane_ns: tuple[Any, str], text: str) -> Answer:
    """`ours` without the pod-enum refusals kubectl apply cannot make (the CRD has no enums),
    each confirmed by pod validation on the apiserver first."""
    errors: dict[str, list[str]] = {}
    for path, found in ours.errors.items():
        kept = []
        for message in found:
            extra = message.startswith("Unsupported value") and not any(
                message in theirs for theirs in server.errors.get(path, [])
            )
            if extra:
                assert _pod_refuses(*plane_ns, text, path, message), (path, message)
            else:
                kept.append(message)
        if kept:
            errors[path] = kept
    return Answer(ours.accepted or not errors, errors, ours.text)


def _assert_agree(server: Answer, ours: Answer) -> None:
    what = f"kubectl:\n{server.text}\ntaas validate:\n{ours.text}"
    assert server.accepted == ours.accepted, what
    assert set(ours.errors) == set(server.errors), what
    for field, found in ours.errors.items():
        for message in found:
            # taas adds a fix to some of kubectl's messages; the rest is kubectl's own text
            said = message.split("; fix: ")[0]
            assert any(said in theirs for theirs in server.errors[field]), (field, message, what)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kubectl_and_taas_validate_agree(
    plane_ns: tuple[Any, str], case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = _kubectl(*plane_ns, _text(case))
    ours = _taas(_text(case), tmp_path, capsys)
    _assert_agree(server, ours)
    assert ours.accepted == (case.expect is None), ours.text
    if case.expect is not None:
        path, phrase = case.expect
        for answer in (server, ours):
            assert any(phrase in m for m in answer.errors.get(path, [])), (path, answer.text)


_FULL = yaml.safe_load(FULL_TEMPLATE.replace("built: 2024-01-01", 'built: "2024-01-01"'))
_SPEC_PATHS = nodes(_FULL["spec"])
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 70000)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["name", "value", "key", "port", "a"]), inner, max_size=3)
    ),
    max_leaves=6,
)


def test_random_edits_of_a_full_job_agree(
    plane_ns: tuple[Any, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Any field of a job with a rich pod template replaced by any JSON value (one or two at a
    time): kubectl and taas validate still agree. A fixed sample (derandomized) in CI."""

    @settings(max_examples=40, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(edits=st.lists(st.tuples(st.sampled_from(_SPEC_PATHS), _JSON), min_size=1, max_size=2))
    def check(edits: list[tuple[tuple[Any, ...], Any]]) -> None:
        obj = copy.deepcopy(_FULL)
        for path, value in edits:
            node = obj["spec"]
            for key in path[:-1]:
                node = node[key] if isinstance(node, dict | list) else None
                if node is None:
                    break
            if isinstance(node, dict) or (isinstance(node, list) and path[-1] < len(node)):
                node[path[-1]] = copy.deepcopy(value)
        text = json.dumps(obj)
        server = _kubectl(*plane_ns, text)
        _assert_agree(server, _pod_only(_taas(text, tmp_path, capsys), server, plane_ns, text))

    check()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("containers[0].imagePullPolicy", "Sometimes"),
        ("containers[0].ports[0].protocol", "ICMP"),
        ("dnsPolicy", "Bogus"),
        ("containers[0].terminationMessagePolicy", "Never"),
    ],
)
def test_pod_enums_are_refused_as_pod_validation_refuses(
    plane_ns: tuple[Any, str], field: str, value: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """What the CRD cannot check but the pod the operator creates must meet: `taas validate`
    refuses it with pod validation's own message, and the apiserver refuses that pod."""
    obj = yaml.safe_load(FULL_TEMPLATE.replace("built: 2024-01-01", 'built: "2024-01-01"'))
    node: Any = obj["spec"]["tfReplicaSpecs"]["worker"]["template"]["spec"]
    parts = re.findall(r"[^.\[\]]+", field)
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node[part]
    node[parts[-1]] = value
    text = json.dumps(obj)
    assert _kubectl(*plane_ns, text).accepted  # the CRD holds no enum
    ours = _taas(text, tmp_path, capsys)
    path = f"spec.tfReplicaSpecs.worker.template.spec.{field}"
    assert not ours.accepted and list(ours.errors) == [path], ours.text
    (message,) = ours.errors[path]
    assert message.startswith(f'Unsupported value: "{value}": supported values: ')
    assert _pod_refuses(*plane_ns, text, path, message)
