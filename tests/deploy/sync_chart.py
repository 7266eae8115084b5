"""Keep the chart's generated copies in step with their sources, and render the chart.

Two files are derived, never edited by hand:
- `charts/taas/files/crds/tfjobs.kubeflow.org.yaml`: a byte-for-byte copy of
  `manifests/crd/tfjobs.kubeflow.org.yaml` (Helm cannot read files outside the chart);
- `manifests/install.yaml`: `helm template` of the chart with default values in namespace
  `taas-system`, plus `namespace.create=true` (the Namespace, with its Pod Security labels), for
  `kubectl apply -f` without Helm.

    python tests/deploy/sync_chart.py           # rewrite both
    python tests/deploy/sync_chart.py --check   # exit 1 naming each file that drifted

The tests in this folder import `render` and `expected_install_yaml` from here, so the drift
check and the writer are one piece of code.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from taas_controlplane.build.binaries import KUBERNETES_VERSION, ensure

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "taas"
CRD_SOURCE = ROOT / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml"
CRD_COPY = CHART / "files" / "crds" / "tfjobs.kubeflow.org.yaml"
INSTALL_YAML = ROOT / "manifests" / "install.yaml"
RELEASE = "taas"
NAMESPACE = "taas-system"

INSTALL_HEADER = f"""\
# TaaS operator, installed without Helm:  kubectl apply --server-side -f manifests/install.yaml
# GENERATED from charts/taas with default values and namespace.create=true (release "{RELEASE}",
# namespace "{NAMESPACE}", labelled for the restricted Pod Security Standard)
# by `python tests/deploy/sync_chart.py`; do not edit by hand (a test fails when it drifts).
# For other values (watched namespaces, replicas, network policy...) use the Helm chart.
"""
# Values of install.yaml beyond the defaults: it creates its namespace, Pod Security labels on.
INSTALL_VALUES = ("namespace.create=true",)


class RenderError(RuntimeError):
    """`helm template` refused the chart or the values; the message is Helm's."""


def render(
    *set_values: str,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    helm: Path | None = None,
    command: str = "template",
) -> str:
    """Run `helm <command>` (template or lint) on the chart with `--set` values; return stdout."""
    binary = helm or ensure("helm")
    args = [str(binary), command]
    if command == "template":
        args += [release, str(CHART), "--namespace", namespace]
        args += ["--kube-version", KUBERNETES_VERSION.lstrip("v")]
    else:
        args += [str(CHART), "--strict", "--namespace", namespace]
        args += ["--kube-version", KUBERNETES_VERSION.lstrip("v")]
    for value in set_values:
        args += ["--set", value]
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)
    if done.returncode != 0:
        raise RenderError(done.stderr.strip() or done.stdout.strip())
    return done.stdout


def expected_install_yaml(helm: Path | None = None) -> str:
    """What `manifests/install.yaml` must contain."""
    return INSTALL_HEADER + render(*INSTALL_VALUES, helm=helm)


def main(argv: list[str] | None = None) -> int:
    """Rewrite the derived files, or with --check report which ones drifted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report drift (exit 1)")
    opts = parser.parse_args(argv)
    crd = CRD_SOURCE.read_bytes()
    if opts.check:
        drifted = []
        if not CRD_COPY.exists() or CRD_COPY.read_bytes() != crd:
            drifted.append(str(CRD_COPY.relative_to(ROOT)))
        if not INSTALL_YAML.exists() or INSTALL_YAML.read_text() != expected_install_yaml():
            drifted.append(str(INSTALL_YAML.relative_to(ROOT)))
        for path in drifted:
            print(f"{path} drifted; run: python tests/deploy/sync_chart.py", file=sys.stderr)
        return 1 if drifted else 0
    CRD_COPY.parent.mkdir(parents=True, exist_ok=True)
    CRD_COPY.write_bytes(crd)
    INSTALL_YAML.write_text(expected_install_yaml())
    print(f"wrote {CRD_COPY.relative_to(ROOT)} and {INSTALL_YAML.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
