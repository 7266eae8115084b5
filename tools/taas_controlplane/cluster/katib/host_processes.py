"""How Katib's host processes run: PostgreSQL for its database, db-manager, katib-controller.

    db = Database.create(directory)           # a fresh PostgreSQL cluster, owned by `postgres`
    db.initdb_argv(); db.server_argv(port); db.create_database_argv(port)
    db_manager_env(db, port); db_manager_argv(port); gate_argv(listen, upstream, kubeconfig)
    ControllerFiles.create(directory, issue, resolv_conf); controller_argv(files, ...)

PostgreSQL is Debian's (`apt-get install postgresql`): it refuses to run as root, so its data
directory is a directory of its own under /tmp owned by the `postgres` user (the run's directory
is root's alone), and every PostgreSQL program runs as that user (`setpriv`). It listens on
127.0.0.1 only, with a password; only db-manager connects.

db-manager has no authentication, so it listens on 127.0.0.1 only; TaaS's gate (gate.py) listens
on the cluster's bridge address, which both the host and every pod reach, and forwards what
each caller may ask (the controller: all; a trial's pod: its own trial's reports).
katib-controller and the collectors it injects find the gate through
`KATIB_DB_MANAGER_SERVICE_IP`/`_PORT` with no namespace suffix.

katib-controller reads its webhook certificate from a path compiled in (`/tmp/cert`) and dials
each suggestion service by its Service name (`<experiment>-<algorithm>.<namespace>:6789`), which
only the cluster's DNS answers. It runs in a private mount namespace (`unshare --mount`, root)
where /etc is a read-only overlay adding a `resolv.conf` that asks CoreDNS (on the bridge
address) with the cluster's search domains, and /tmp one adding `cert/tls.{crt,key}` (signed by
the cluster's CA for 127.0.0.1). Nothing is written to the host's /etc or /tmp/cert. The /tmp
layer lives under /run (overlayfs refuses a layer inside the directory it covers) and goes
with the run.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import secrets
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from taas_controlplane.build.binaries import ensure
from taas_controlplane.controlplane.certificates import KeyPair

POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")
DB_USER = "katib"
DB_NAME = "katib"
_OVERLAYS_THEN_EXEC = (
    'mount -t overlay taas-katib-etc -o "lowerdir=$1:/etc" /etc'
    ' && mount -t overlay taas-katib-tmp -o "lowerdir=$2:/tmp" /tmp'
    ' && shift 2 && exec "$@"'
)


class KatibError(RuntimeError):
    """Katib cannot run here, or a part of it did not start; the message says why."""


def check_can_run() -> None:
    """Raise KatibError unless PostgreSQL and the private mounts are available."""
    if os.geteuid() != 0:
        raise KatibError(
            "Katib's controller runs in a private mount namespace (its certificate path and "
            "the cluster's DNS), which needs root: run as root (e.g. with sudo)."
        )
    if importlib.util.find_spec("grpc") is None:
        raise KatibError(
            "db-manager's gate (taas_controlplane.cluster.katib.gate) needs grpcio in this "
            "Python: `pip install -e '.[dev]'` (or '.[tensorflow]': TensorFlow brings it)"
        )
    missing = [t for t in ("unshare", "mount", "setpriv") if shutil.which(t) is None]
    if not (POSTGRES_BIN / "postgres").exists():
        missing.append("postgresql")
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        missing.append("postgresql (its `postgres` user)")
    if missing:
        raise KatibError(
            f"Katib needs {', '.join(missing)}: install util-linux, mount and postgresql "
            "(`apt-get install util-linux mount postgresql`)."
        )


def _as_postgres(argv: list[str]) -> list[str]:
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--", *argv]


class Database(BaseModel):
    """A PostgreSQL cluster of this run: its directory (data, socket, password file)."""

    directory: Path
    password: str

    @classmethod
    def create(cls) -> Database:
        """A new directory owned by `postgres` (removed by `remove()`)."""
        directory = Path(tempfile.mkdtemp(prefix="taas-katib-db-", dir="/tmp"))
        account = pwd.getpwnam("postgres")
        db = cls(directory=directory, password=secrets.token_hex(16))
        db.password_file.write_text(db.password + "\n")
        for path in (directory, db.password_file):
            os.chown(path, account.pw_uid, account.pw_gid)
        return db

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def password_file(self) -> Path:
        return self.directory / "password"

    def initdb_argv(self) -> list[str]:
        return _as_postgres([
            str(POSTGRES_BIN / "initdb"), "-D", str(self.data), "-U", DB_USER,
            "--auth=scram-sha-256", f"--pwfile={self.password_file}", "--no-sync",
        ])  # fmt: skip

    def server_argv(self, port: int) -> list[str]:
        return _as_postgres([
            str(POSTGRES_BIN / "postgres"), "-D", str(self.data), "-p", str(port),
            "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.directory}",
            "-c", "fsync=off",
        ])  # fmt: skip

    def create_database_argv(self, port: int) -> list[str]:
        return _as_postgres([
            str(POSTGRES_BIN / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", DB_USER,
            "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", f"CREATE DATABASE {DB_NAME}",
        ])  # fmt: skip

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def db_manager_env(db: Database, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "DB_NAME": "postgres",
        "DB_USER": DB_USER,
        "DB_PASSWORD": db.password,
        "KATIB_POSTGRESQL_DB_HOST": "127.0.0.1",
        "KATIB_POSTGRESQL_DB_PORT": str(port),
        "KATIB_POSTGRESQL_DB_DATABASE": DB_NAME,
    }


def db_manager_argv(port: int) -> list[str]:
    """db-manager on loopback only: the gate is its one door from pods."""
    return [str(ensure("katib-db-manager")), f"-listen-address=127.0.0.1:{port}"]


def gate_argv(listen: str, upstream: str, kubeconfig: str) -> list[str]:
    """The gate (gate.py) on `listen` (`host:port`, the bridge address: also the host's own),
    forwarding to db-manager at `upstream`, looking pods up as `kubeconfig`'s user."""
    host = listen.rsplit(":", 1)[0]
    return [
        sys.executable, "-m", "taas_controlplane.cluster.katib.gate", "--listen", listen,
        "--upstream", upstream, "--kubeconfig", kubeconfig,
        "--host-address", host, "--host-address", "127.0.0.1",
    ]  # fmt: skip


class ControllerFiles(BaseModel):
    """katib-controller's /etc and /tmp overlays' top layers, and its config file; `remove()`
    removes the /tmp layer (the rest is in the run's directory)."""

    etc_overlay: Path
    tmp_overlay: Path
    config: Path

    @classmethod
    def create(
        cls,
        directory: Path,
        issue: Callable[[str, str, list[str]], KeyPair],
        resolv_conf: str,
        config: str,
    ) -> ControllerFiles:
        files = cls(
            etc_overlay=directory / "etc-overlay",
            tmp_overlay=Path(tempfile.mkdtemp(prefix="taas-katib-tmp-", dir="/run")),
            config=directory / "katib-config.yaml",
        )
        files.etc_overlay.mkdir(parents=True, exist_ok=True)
        (files.etc_overlay / "resolv.conf").write_text(resolv_conf)
        certs = files.tmp_overlay / "cert"
        certs.mkdir(parents=True, exist_ok=True)
        pair = issue("katib-webhook", "katib-controller", ["127.0.0.1", "localhost"])
        shutil.copyfile(pair.cert, certs / "tls.crt")
        shutil.copyfile(pair.key, certs / "tls.key")
        (certs / "tls.key").chmod(0o600)
        files.config.write_text(config)
        return files

    def remove(self) -> None:
        shutil.rmtree(self.tmp_overlay, ignore_errors=True)


def resolv_conf(dns_address: str, cluster_domain: str) -> str:
    """Names as a pod in `default` resolves them, and a Service's `<name>.<namespace>` first."""
    return (
        f"nameserver {dns_address}\nsearch svc.{cluster_domain} {cluster_domain}\noptions ndots:5\n"
    )


def controller_env(
    kubeconfig: str, db_manager_address: str, db_manager_port: int
) -> dict[str, str]:
    """Its kubeconfig; where it and the collectors it injects find db-manager."""
    return {
        **os.environ,
        "KUBECONFIG": kubeconfig,
        "KATIB_DB_MANAGER_SERVICE_IP": db_manager_address,
        "KATIB_DB_MANAGER_SERVICE_PORT": str(db_manager_port),
        "KATIB_DB_MANAGER_SERVICE_NAMESPACE": "",
    }


def controller_argv(files: ControllerFiles) -> list[str]:
    return [
        "unshare", "--mount", "--propagation", "private", "--",
        "sh", "-c", _OVERLAYS_THEN_EXEC, "sh", str(files.etc_overlay), str(files.tmp_overlay),
        str(ensure("katib-controller")), f"--katib-config={files.config}",
    ]  # fmt: skip
