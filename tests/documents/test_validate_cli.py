"""`taas validate` on hostile YAML, as a subprocess: exit 2, one message naming the limit, no
traceback, within seconds and a bounded memory (the child's own maxrss, from wait4)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .bombs import BOMB_618, BOMB_722, deep_nesting, many_documents

pytestmark = pytest.mark.timeout(120)

TAAS = [sys.executable, "-m", "taas_operator.cli"]
#: Peak memory above `taas validate` of a small valid file (~60 MiB: Python, pydantic, the CRD
#: schema). Measured as a difference because a child's maxrss also counts the test process it
#: was spawned from (Linux records the parent's memory at exec); before the bounded loader the
#: 618-byte bomb took ~450 MiB more and the 722-byte one over 1 GiB.
MAX_RSS_GROWTH_MIB = 90
SMALL_VALID = b"""apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: small}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers: [{name: tensorflow, image: example/train:1}]
"""
#: CPU seconds of the child (user + system, from wait4): immune to a loaded machine, unlike
#: the wall clock; a small valid file takes about 1 s, the 618-byte bomb took 15 s before.
MAX_CPU_SECONDS = 5.0


def validate(
    tmp_path: Path, data: bytes, target: str | None = None
) -> tuple[int, str, str, float, float]:
    """(exit code, stdout, stderr, child CPU seconds, child maxrss in MiB) of `taas validate
    FILE`, FILE holding `data` (or `target` when given)."""
    path = tmp_path / "job.yaml"
    path.write_bytes(data)
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        child = subprocess.Popen(
            [*TAAS, "validate", target or str(path)], stdout=stdout, stderr=stderr
        )
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            child.returncode = 0  # reaped by wait4; keep Popen from waiting again
    seconds = usage.ru_utime + usage.ru_stime
    code = os.waitstatus_to_exitcode(status)
    return code, out.read_text(), err.read_text(), seconds, usage.ru_maxrss / 1024


def refused(tmp_path: Path, data: bytes) -> str:
    code, stdout, stderr, seconds, rss = validate(tmp_path, data)
    assert code == 2, stderr
    assert stdout == ""
    assert stderr.startswith("error: ") and stderr.count("error: ") == 1, stderr[:2000]
    assert "Traceback" not in stderr
    assert seconds < MAX_CPU_SECONDS, seconds
    code, _, _, _, baseline = validate(tmp_path, SMALL_VALID)
    assert code == 0
    assert rss - baseline < MAX_RSS_GROWTH_MIB, (rss, baseline)
    return stderr


@pytest.mark.parametrize("bomb", [BOMB_618, BOMB_722], ids=["618-bytes", "722-bytes"])
def test_billion_laughs(tmp_path: Path, bomb: bytes) -> None:
    err = refused(tmp_path, bomb)
    assert "the YAML expands to more than 250,000 values, lists and maps" in err


def test_deep_nesting(tmp_path: Path) -> None:
    err = refused(tmp_path, deep_nesting(50_000))
    assert "the YAML nests lists and maps more than 100 deep" in err


def test_oversize_input(tmp_path: Path) -> None:
    err = refused(tmp_path, b"a: " + b"x" * (4 * 1024 * 1024) + b"\n")
    assert "the input is larger than 3.0 MiB (4.0 MiB, the apiserver's request limit)" in err


def test_endless_input(tmp_path: Path) -> None:
    code, _, err, seconds, _ = validate(tmp_path, b"", "/dev/zero")
    assert code == 2 and "the input is larger than 3.0 MiB" in err, err
    assert "Traceback" not in err and seconds < MAX_CPU_SECONDS


def test_many_documents(tmp_path: Path) -> None:
    err = refused(tmp_path, many_documents(1000))
    assert "the YAML has more than 100 documents ('---' separated): split the file" in err


def test_binary_value(tmp_path: Path) -> None:
    data = SMALL_VALID.replace(b"image: example/train:1}", b"image: !!binary ZXhhbXBsZQ==}")
    err = refused(tmp_path, data)
    assert "the YAML has a !!binary value, a type JSON and Kubernetes do not have" in err


def _job(annotations: dict[str, str], template_annotations: dict[str, str]) -> bytes:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "big", "annotations": annotations},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {
                    "template": {
                        "metadata": {"annotations": template_annotations},
                        "spec": {"containers": [{"name": "tensorflow", "image": "x"}]},
                    }
                }
            }
        },
    }
    return yaml.safe_dump(job).encode()


def test_annotations_over_256_kib(tmp_path: Path) -> None:
    big = {"note": "x" * 300_000}
    err = refused(tmp_path, _job(big, {}))
    assert "* metadata.annotations: Too long: must have at most 262144 bytes" in err
    assert "the apiserver refuses the TFJob" in err
    code, _, err, _, _ = validate(tmp_path, _job({}, big))
    assert code == 2
    assert (
        "* spec.tfReplicaSpecs[Worker].template.metadata.annotations: Too long: must have at "
        "most 262144 bytes (the keys and values have 300004)"
    ) in err
    assert "would refuse every pod of this replica type" in err
    code, stdout, err, _, _ = validate(tmp_path, _job({"note": "x" * 262_140}, {}))
    assert code == 0, err  # 4 + 262140 bytes: at the limit
    assert stdout.startswith(
        "tfjob.kubeflow.org/big valid (namespace default; it would make 1 pod "
    )


def _env_job(value: str, copies: int) -> bytes:
    """A TFJob whose worker env holds `value` `copies` times (one YAML anchor, aliases after)."""
    env = [f'                - {{name: A, value: &big "{value}"}}']
    env += [f"                - {{name: B{i}, value: *big}}" for i in range(copies - 1)]
    return (
        """apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: big}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers:
            - name: tensorflow
              image: x
              env:
"""
        + "\n".join(env)
        + "\n"
    ).encode()


def test_object_over_1_5_mib_as_json(tmp_path: Path) -> None:
    # 0.8 MiB of YAML, one value used twice through an alias: 1.6 MiB once sent, which etcd
    # refuses (the apiserver's request limit, 3 MiB, would let it through)
    value = "x" * (800 * 1024)
    code, _, err, _, _ = validate(tmp_path, _env_job(value, 2))
    assert code == 2
    size = re.search(r"\* <the TFJob>: Too long: the object is (\d+) bytes as JSON", err)
    assert size and int(size[1]) > 2 * len(value), err[-1000:]
    assert "as JSON, more than the 1572864 bytes (1.5 MiB) the apiserver stores" in err


def test_object_over_512_kib_is_valid_with_a_warning(tmp_path: Path) -> None:
    code, stdout, err, _, _ = validate(tmp_path, _env_job("x" * (600 * 1024), 1))
    assert code == 0, err[-1000:]
    assert stdout.startswith(
        "tfjob.kubeflow.org/big valid (namespace default; it would make 1 pod "
    )
    assert err.startswith("warning: ") and 'TFJob "big": <the TFJob>: the object is ' in err
    assert "more than 524288 (512 KiB): every watch of TFJobs" in err
    code, _, err, _, _ = validate(tmp_path, _env_job("x" * (500 * 1024), 1))
    assert code == 0 and err == "", err[-1000:]


def test_oversize_stdin() -> None:
    done = subprocess.run(
        [*TAAS, "validate", "-"],
        input=b"a: " + b"x" * (4 * 1024 * 1024),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "error: <stdin>: the input is larger than 3.0 MiB (the apiserver's request limit); "
        "split it into smaller files\n"
    )
