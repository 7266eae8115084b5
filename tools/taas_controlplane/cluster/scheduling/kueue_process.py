"""How Kueue's manager runs on this machine: its certificates and its command line.

    files = KueueFiles.create(directory, issue)        # serving cert + key, in both places
    kueue_argv(files, config_file, kubeconfig) -> list[str]

Kueue with `internalCertManagement.enable: false` reads its webhook certificate from
`webhook.certDir` (ours, under the run's directory) and its metrics certificate from a path
compiled in, `/etc/kueue/metrics/certs/tls.{crt,key}` (cmd/kueue/main.go; a Secret mounted there
in a pod). Nothing is written to the host's /etc: the manager runs in a private mount namespace
(`unshare --mount`) where /etc is a read-only overlay of the real /etc under a directory of
ours holding `kueue/metrics/certs`. The mount exists only while the process does; it needs root
(the one-node cluster and the tests run as root), and without it start-up fails with that
reason. Both certificates are the same key pair, signed by the control plane's CA for
127.0.0.1 and localhost.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from taas_controlplane.build.binaries import ensure
from taas_controlplane.controlplane.certificates import KeyPair

#: Where Kueue v0.19 reads its metrics certificate when it does not make its own.
METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
_MOUNT_THEN_EXEC = (
    'mount -t overlay taas-kueue-etc -o "lowerdir=$1:/etc" /etc && shift && exec "$@"'
)


class KueueError(RuntimeError):
    """Kueue cannot run here; the message says why and what to do."""


class KueueFiles(BaseModel):
    """The manager's certificate files: its webhook certDir and the /etc overlay's top layer."""

    cert_dir: Path
    etc_overlay: Path

    @classmethod
    def create(cls, directory: Path, issue: Callable[[str, str, list[str]], KeyPair]) -> KueueFiles:
        """Issue the serving certificate (`issue(stem, common_name, hosts)`, the control
        plane's CA) and lay it out where Kueue reads it."""
        pair = issue("kueue-serving", "kueue-webhook", ["127.0.0.1", "localhost"])
        files = cls(cert_dir=directory / "certs", etc_overlay=directory / "etc-overlay")
        metrics = files.etc_overlay / METRICS_CERT_DIR.relative_to("/etc")
        for target in (files.cert_dir, metrics):
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pair.cert, target / "tls.crt")
            shutil.copyfile(pair.key, target / "tls.key")
            (target / "tls.key").chmod(0o600)
        return files


def check_can_run() -> None:
    """Raise KueueError unless this process may make the private mount Kueue needs."""
    if os.geteuid() != 0:
        raise KueueError(
            "Kueue reads its metrics certificate from /etc/kueue/metrics/certs; TaaS gives it "
            "one in a private mount namespace, which needs root: run as root (e.g. with sudo)."
        )
    missing = [tool for tool in ("unshare", "mount") if shutil.which(tool) is None]
    if missing:
        raise KueueError(
            f"{' and '.join(missing)} not found: install util-linux (`apt-get install "
            "util-linux mount`)."
        )


def kueue_argv(files: KueueFiles, config_file: Path, kubeconfig: str) -> list[str]:
    """Kueue's manager in its own mount namespace with the overlaid /etc."""
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "sh",
        "-c",
        _MOUNT_THEN_EXEC,
        "sh",
        str(files.etc_overlay),
        str(ensure("kueue")),
        f"--config={config_file}",
        f"--kubeconfig={kubeconfig}",
        "--zap-log-level=2",
    ]
