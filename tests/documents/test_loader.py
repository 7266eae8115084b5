"""The bounded YAML loader, in process: hostile documents are refused in milliseconds with a
message naming the limit; ordinary manifests (examples/, anchors used a few times) still load."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from taas_operator.documents import (
    LIMITS,
    InputError,
    YamlLimits,
    load_documents,
    load_tfjobs,
    loader,
    parse_tfjobs,
    size_errors,
    size_warnings,
)

from .bombs import BOMB_618, BOMB_722, deep_nesting, many_documents

REPO = Path(__file__).resolve().parents[2]


def refused(text: bytes | str, limits: YamlLimits = LIMITS) -> str:
    """The InputError text for `text`, which must come within half a second."""
    start = time.monotonic()
    with pytest.raises(InputError) as caught:
        load_documents(text.decode() if isinstance(text, bytes) else text, "job.yaml", limits)
    assert time.monotonic() - start < 0.5
    return str(caught.value)


@pytest.mark.parametrize("bomb", [BOMB_618, BOMB_722], ids=["618-bytes", "722-bytes"])
def test_billion_laughs_is_refused_at_once(bomb: bytes) -> None:
    message = refused(bomb)
    assert message.startswith("job.yaml (line 11): the YAML expands to more than 250,000 values")
    assert "each alias *name counts as a copy of what it names" in message
    assert "expand fewer aliases or split the file" in message


def test_too_many_aliases() -> None:
    text = "base: &b 1\nlist:\n" + "".join("  - *b\n" for _ in range(101))
    message = refused(text)
    assert "the YAML uses more than 100 aliases (*name) in one document" in message
    assert "expand them or split the file" in message
    assert load_documents("base: &b 1\nlist:\n" + "  - *b\n" * 100, "ok.yaml")  # 100 is fine


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    message = refused("a: &loop [1, *loop]\n")
    assert "the alias *loop refers to the node &loop it sits in (a cycle" in message


@pytest.mark.parametrize("depth", [101, 100_000])
def test_deep_nesting(depth: int) -> None:
    message = refused(deep_nesting(depth))
    assert "the YAML nests lists and maps more than 100 deep: flatten it" in message
    assert load_documents(deep_nesting(99).decode(), "ok.yaml")  # the map + 99 lists


def test_oversize_input_is_refused_before_parsing() -> None:
    text = "a: " + "x" * (3 * 1024 * 1024) + "\n"
    message = refused(text)
    assert message == (
        "job.yaml: the input is larger than 3.0 MiB (3.0 MiB, the apiserver's request limit); "
        "split it into smaller files"
    )


def test_oversize_file_is_read_no_further_than_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * (64 * 1024 * 1024))
    start = time.monotonic()
    with pytest.raises(InputError, match=r"larger than 3\.0 MiB \(64\.0 MiB, "):
        load_tfjobs(str(path))
    assert time.monotonic() - start < 0.5


def test_many_documents() -> None:
    message = refused(many_documents(101))
    assert "the YAML has more than 100 documents ('---' separated): split the file" in message
    assert len(parse_tfjobs(many_documents(100).decode(), "ok.yaml")) == 100


def test_the_node_bound_counts_the_whole_input() -> None:
    small = YamlLimits(nodes=50)
    document = "---\na: [" + ",".join("1" * 30) + "]\n"  # 32 nodes: the map, key, list, 30
    assert load_documents(document, "one.yaml", small)
    message = refused(document * 2, small)
    assert "more than 50 values, lists and maps" in message


def test_a_huge_integer_is_an_input_error() -> None:
    message = refused("a: " + "1" * 5000 + "\n")
    assert message.startswith("job.yaml: a value cannot be read: ")


def test_examples_still_load() -> None:
    paths = sorted((REPO / "examples").rglob("*.yaml"))
    assert paths
    for path in paths:
        text = path.read_text()
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
        assert load_documents(text, str(path)) == documents, path
        if any(isinstance(d, dict) and d.get("kind") == "TFJob" for d in documents):
            assert load_tfjobs(str(path)), path  # a Katib Experiment holds one, not is one


def test_anchors_used_a_few_times_load_as_written() -> None:
    text = """apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: anchors, annotations: {built: 2024-01-01}}
spec:
  tfReplicaSpecs:
    PS:
      replicas: 1
      template: &pod
        spec:
          containers:
            - name: tensorflow
              image: tensorflow/tensorflow:2.16.1
              env: &env [{name: A, value: "1"}, {name: B, value: "2"}]
    Worker:
      replicas: 2
      template: *pod
    Chief:
      template:
        spec:
          containers:
            - {name: tensorflow, image: tensorflow/tensorflow:2.16.1, env: *env}
"""
    (job,) = parse_tfjobs(text, "anchors.yaml")
    specs = job.spec.tf_replica_specs
    assert specs["Worker"].template == specs["PS"].template
    assert job.metadata.annotations == {"built": "2024-01-01"}  # a date stays a string


def test_syntax_errors_keep_their_message() -> None:
    message = refused("kind: TFJob\nmetadata:\n  name: x\n spec: [\n")
    assert message.startswith("job.yaml: invalid YAML at line ")


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        (BOMB_722, "expands to more than 250,000"),
        (deep_nesting(5000), "nests lists and maps more than 100 deep"),
        (many_documents(101), "more than 100 documents"),
        ("b: &b 1\nl:\n" + "  - *b\n" * 101, "more than 100 aliases"),
    ],
)
def test_the_bounds_hold_with_pyyamls_own_parser(
    monkeypatch: pytest.MonkeyPatch, text: bytes | str, limit: str
) -> None:
    """Where PyYAML is built without libyaml, its pure-Python parser feeds the same composer."""
    monkeypatch.setattr(loader, "_Loader", loader._PyLoader)
    assert limit in refused(text)


def test_json_with_a_character_past_u_ffff_loads_as_kubectl_reads_it() -> None:
    """json.dumps writes such a character as a surrogate-pair escape, which libyaml refuses and
    kubectl and PyYAML's own scanner read: the loader reads it the same way (issue 20's loader
    must not refuse what `kubectl apply` accepts)."""
    text = json.dumps({"apiVersion": "v1", "note": "\U00010000"})
    (doc,) = load_documents(text, "job.json")
    assert doc["apiVersion"] == "v1" and len(doc["note"]) == 2


@pytest.mark.parametrize("use_pyyaml", [False, True], ids=["libyaml", "pyyaml"])
@pytest.mark.parametrize(
    ("text", "tag", "line"),
    [
        ("a: 1\nb: !!binary aGVsbG8=\n", "binary", 2),
        ("args:\n  - !!binary |\n    aGVsbG8=\n", "binary", 2),
        ("a: !!set {x, y}\n", "set", 1),
    ],
)
def test_values_json_cannot_hold_are_refused(
    monkeypatch: pytest.MonkeyPatch, use_pyyaml: bool, text: str, tag: str, line: int
) -> None:
    if use_pyyaml:
        monkeypatch.setattr(loader, "_Loader", loader._PyLoader)
    message = refused(text)
    assert message.startswith(f"job.yaml (line {line}): the YAML has a !!{tag} value")
    assert "fix: write it as a plain value" in message


def test_sizes_are_counted_with_escaped_astral_characters() -> None:
    """The loader keeps a JSON surrogate-pair escape as two surrogates (as kubectl reads it);
    the size checks count them instead of failing to encode them."""
    doc = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "a", "annotations": {"built": "\ud800\udc00"}},
        "spec": {"runPolicy": "\ud800\udc00"},
    }
    assert size_errors(doc) == [] and size_warnings(doc) == []
