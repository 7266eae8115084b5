"""Hostile YAML for the loader's tests: billion laughs of an exact size, nesting, many documents."""

from __future__ import annotations

_HEAD = """apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: laughs
  annotations:
    a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
"""
_TAIL = """spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers: [{name: tensorflow, image: x}]
"""


def billion_laughs(levels: int, size: int) -> bytes:
    """A TFJob whose annotation `a<levels-1>` nests nine aliases of the level below, `levels`
    deep (9**levels "lol"s once expanded), padded with a comment to exactly `size` bytes."""
    text = _HEAD
    for i in range(1, levels):
        text += f"    a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]\n"
    text += _TAIL
    pad = size - len(text.encode()) - 2
    assert pad >= 0, f"{levels} levels need {len(text)} bytes"
    data = (text + "#" + "x" * pad + "\n").encode()
    assert len(data) == size
    return data


#: 618 bytes, 9**7 (4.8 million) strings once expanded: before the bounded loader `taas validate`
#: took about a minute and 500 MB (15 s / 272 MB for the issue's own 618-byte document).
BOMB_618 = billion_laughs(7, 618)
#: 722 bytes, 9**9 (387 million) strings: before, `taas validate` never finished (1.26 GB RSS).
BOMB_722 = billion_laughs(9, 722)


def deep_nesting(depth: int) -> bytes:
    """`x: [[[...]]]`, `depth` lists deep."""
    return ("x: " + "[" * depth + "]" * depth + "\n").encode()


def many_documents(count: int) -> bytes:
    """`count` small valid TFJobs, one document each."""
    return "".join(
        f"---\napiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {{name: job-{i}}}\n"
        f"spec: {{tfReplicaSpecs: {{Worker: {{template: {{spec: {{containers: "
        f"[{{name: tensorflow, image: x}}]}}}}}}}}}}\n"
        for i in range(count)
    ).encode()
