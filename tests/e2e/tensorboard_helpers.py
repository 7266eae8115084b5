"""`taas tensorboard JOB` against the cluster, for the end-to-end tests that read a job's
TensorBoard through the apiserver.

    served_tensorboard(cluster, ns, name, said, context) -> fetch(path) -> the page's bytes
"""

from __future__ import annotations

import re
import signal
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from taas_controlplane.cluster.cluster import Cluster
from taas_operator.processes import spawn, stop


@contextmanager
def served_tensorboard(
    cluster: Cluster, ns: str, name: str, said: Path, context: Callable[[], str] | None = None
) -> Iterator[Callable[[str], bytes]]:
    """Run `taas tensorboard` for the job (its stderr to `said`) and yield a `fetch(path)` of its
    TensorBoard through the local proxy, with the proxy's token. An HTTP error fails the test
    with what `taas tensorboard` said (and `context()`, if given); the command is stopped on
    exit."""
    with said.open("wb") as stderr:
        tensorboard = spawn(
            [sys.executable, "-m", "taas_operator.cli", "tensorboard", name, "-n", ns,
             "--kubeconfig", cluster.kubeconfig, "--port", "0", "--timeout", "180"],
            stderr=stderr,
        )  # fmt: skip
    try:
        assert tensorboard.stdout is not None
        line = tensorboard.stdout.readline().decode()
        found = re.search(r" at (http://\S+/)\?token=(\S+) ", line)  # the proxy's token
        assert found, f"{line!r}; stderr: {said.read_text(errors='replace')[-2000:]}"
        url, token = found.groups()

        def fetch(path: str) -> bytes:
            headers = {"Authorization": f"Bearer {token}"}
            request = urllib.request.Request(url + path, headers=headers)
            try:
                return bytes(urllib.request.urlopen(request, timeout=60).read())
            except urllib.error.HTTPError as err:
                more = f"\n{context()}" if context else ""
                pytest.fail(
                    f"GET {path or '/'}: HTTP {err.code} {err.read()[:2000]!r}\ntaas tensorboard "
                    f"said: {said.read_text(errors='replace')[-2000:]}{more}",
                    pytrace=False,
                )

        yield fetch
    finally:
        stop(tensorboard, signal.SIGTERM, grace=10)
