"""parse_tfjob: the pydantic side of validation, with the same paths and messages as the CRD."""

from __future__ import annotations

import pytest

from taas_operator.api import TFJobValidationError, messages, parse_tfjob
from tests.harness.api_cases import BAD, good


@pytest.mark.parametrize(("rule", "obj", "path", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_spec_names_field_and_fix(rule, obj, path, message):
    with pytest.raises(TFJobValidationError) as info:
        parse_tfjob(obj)
    assert f"{path}: {message}" in [str(e) for e in info.value.errors]


def test_good_spec_gets_defaults():
    job = parse_tfjob(good())
    ps = job.spec.tf_replica_specs["PS"]
    assert ps.replicas == 1 and ps.restart_policy == "Never"
    assert job.spec.run_policy.clean_pod_policy == "Running"
    assert job.spec.run_policy.suspend is False
    assert job.spec.success_policy == ""


def test_keys_are_normalised_case_insensitively():
    obj = good()
    specs = obj["spec"]["tfReplicaSpecs"]
    specs["ps"] = specs.pop("PS")
    specs["WORKER"] = specs.pop("Worker")
    assert list(parse_tfjob(obj).spec.tf_replica_specs) == ["PS", "Worker"]


def test_every_problem_is_reported_at_once():
    obj = good("Bad_Name")
    del obj["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]
    obj["spec"]["tfReplicaSpecs"]["PS"]["replicas"] = -2
    with pytest.raises(TFJobValidationError) as info:
        parse_tfjob(obj)
    paths = [e.path for e in info.value.errors]
    assert paths == [
        "metadata.name",
        "spec.tfReplicaSpecs[PS].replicas",
        "spec.tfReplicaSpecs[Worker].template.spec.containers[0].image",
    ]


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda o: o["spec"].pop("tfReplicaSpecs"), "spec.tfReplicaSpecs"),
        (lambda o: o.pop("spec"), "spec"),
        (lambda o: o["spec"]["runPolicy"].update(suspend="maybe"), "spec.runPolicy.suspend"),
        (lambda o: o["spec"]["runPolicy"].update(typo=1), "spec.runPolicy.typo"),
        (lambda o: o.update(kind="PyTorchJob"), "kind"),
    ],
)
def test_type_and_shape_errors_name_the_field(edit, path):
    obj = good()
    obj["spec"]["runPolicy"] = {}
    edit(obj)
    with pytest.raises(TFJobValidationError) as info:
        parse_tfjob(obj)
    assert path in [e.path for e in info.value.errors]


@pytest.mark.parametrize("name", ["mnist\n", "mnist\n\n", "\nmnist"])
def test_a_name_with_a_newline_is_not_a_dns_label(name):
    with pytest.raises(TFJobValidationError) as info:
        parse_tfjob(good(name))
    assert "metadata.name: " + messages.NAME_DNS1035 in [str(e) for e in info.value.errors]


def test_a_quantity_with_a_trailing_newline_breaks_the_schemas_pattern():
    # the schema's patterns are Go's: `$` is the end of the text, as the apiserver reads them
    obj = good()
    container = obj["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": "1\n"}}
    with pytest.raises(TFJobValidationError) as info:
        parse_tfjob(obj)
    assert any("resources.limits.cpu in body should match" in str(e) for e in info.value.errors)


@pytest.mark.parametrize("value", [3e11, 2**63 - 1, 2**31])
def test_no_deadline_past_what_a_date_can_hold(value):
    """issue 39: 3e11 s (9,500 years) and 2**63 - 1 passed, then every pass failed."""
    obj = good()
    obj["spec"]["runPolicy"] = {"activeDeadlineSeconds": value}
    with pytest.raises(TFJobValidationError) as info:
        parse_tfjob(obj)
    (error,) = info.value.errors
    assert error.path == "spec.runPolicy.activeDeadlineSeconds"
    assert error.message.endswith("should be less than or equal to 2147483647")


def test_the_largest_bounded_values_pass():
    obj = good()
    obj["spec"]["runPolicy"] = {
        "activeDeadlineSeconds": 2**31 - 1,
        "ttlSecondsAfterFinished": 2**31 - 1,
        "backoffLimit": 2**31 - 1,
    }
    job = parse_tfjob(obj)
    assert job.spec.run_policy.active_deadline_seconds == 2**31 - 1
