"""`taas-controlplane env`: the shell lines that give a user this project's helm and kubectl.

Both are built from Go modules into the cache like the cluster's own binaries (kubectl at the
cluster's Kubernetes version), so a fresh machine needs neither installed:

    eval "$(taas-controlplane env)"     # then helm ... and kubectl ... work

Prints `export PATH=<helm's dir>:<kubectl's dir>:$PATH`, building what the cache lacks first
(progress on stderr), and `export KUBECONFIG=<admin kubeconfig>` when a one-node cluster
(`taas-controlplane cluster up`) is running on this machine, with `TAAS_REGISTRY` (its
registry's `host:port`, where nodes pull), `TAAS_REGISTRY_PUSH` (its push side on loopback),
`TAAS_REGISTRY_CERT_DIR` (its CA, for `buildah --cert-dir`) and `REGISTRY_AUTH_FILE` (the push
side's credentials, which buildah and podman read). Only stdout is meant for `eval`.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from taas_controlplane.build.binaries import BuildError, ensure
from taas_controlplane.cluster.machine_lock import running_kubeconfig
from taas_controlplane.cluster.registry import RunningRegistry, running_registry

USER_TOOLS = ("helm", "kubectl")


def shell_lines(
    tool_dirs: list[Path], kubeconfig: Path | None, registry: RunningRegistry | None = None
) -> list[str]:
    """The `export` lines for POSIX shells (each path quoted; the user's PATH kept after)."""
    unique = list(dict.fromkeys(str(d) for d in tool_dirs))
    lines = [f'export PATH={":".join(shlex.quote(d) for d in unique)}:"$PATH"']
    if kubeconfig is not None:
        lines.append(f"export KUBECONFIG={shlex.quote(str(kubeconfig))}")
    if registry is not None:
        lines.append(f"export TAAS_REGISTRY={shlex.quote(registry.address)}")
        lines.append(f"export TAAS_REGISTRY_PUSH={shlex.quote(registry.push_address)}")
        lines.append(f"export TAAS_REGISTRY_CERT_DIR={shlex.quote(str(registry.cert_dir))}")
        lines.append(f"export REGISTRY_AUTH_FILE={shlex.quote(str(registry.auth_file))}")
    return lines


def main() -> int:
    """Print the lines; on a build failure print nothing to stdout, the reason to stderr, exit 1."""
    try:
        dirs = [ensure(name).parent for name in USER_TOOLS]
    except BuildError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    kubeconfig = running_kubeconfig()
    registry = running_registry() if kubeconfig is not None else None
    for line in shell_lines(dirs, kubeconfig, registry):
        print(line)
    if kubeconfig is None:
        print(
            "# no one-node cluster runs here: KUBECONFIG left as it is "
            "(start one with `taas-controlplane cluster up`)"
        )
    return 0
