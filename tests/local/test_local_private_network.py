"""`taas run` keeps the replicas' servers private: each job runs in a network namespace of its
own, so a TCP connection from outside it (this test's namespace: the host's 127.0.0.1 and the
machine's own non-loopback addresses) to a replica's port is refused while the job runs, and
the job still reaches Succeeded, its replicas talking over their own 127.0.0.1.

Real processes throughout. The servers listen on 0.0.0.0, as TensorFlow's gRPC servers do
(`*:<port>`); one test runs the real MNIST example and probes TensorFlow's own ports. Paths:
- root (how the tests run here): a plain network namespace;
- without capabilities (root with an empty bounding set, through `setpriv`): a user namespace
  owning the network namespace, the path every non-root user takes;
- no namespace possible (a user namespace whose user.max_user_namespaces is 0, without
  capabilities): the one-line warning, and the job runs on the host network, reachable.
- a non-root user (nobody, through `setpriv`): the same user namespace, its uid mapped to itself
  and its capabilities gone at exec. This checkout's interpreter may live where nobody cannot
  enter (/root/.pyenv here), so the test runs a system interpreter of the same version with this
  environment's packages on PYTHONPATH, in a scratch directory nobody can use.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

import taas_operator
from tests.local.local_harness import (
    TAAS,
    Runner,
    condition,
    final_status,
    fresh_copy,
    host_addresses,
    kill_marked,
    listening_ports,
    probe,
    replica,
    tfjob,
    token,
    write,
)

pytestmark = pytest.mark.timeout(120)

PRIVATE_NOTE = "each job's replicas share a private network"
NO_CAPABILITIES = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]
AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

# The PS serves on 0.0.0.0:<its TF_CONFIG port> until stopped; the worker waits for the test's
# go file, reaches the PS at its TF_CONFIG address and says hello on the runner's Unix socket.
PS = """
import json, os, socket
config = json.loads(os.environ["TF_CONFIG"])
port = int(config["cluster"]["ps"][0].rsplit(":", 1)[1])
server = socket.create_server(("0.0.0.0", port))
print("listening", port, os.getpid(), "uid", os.getuid(), flush=True)
while True:
    conn, _ = server.accept()
    conn.recv(16)
    conn.sendall(b"pong")
    conn.close()
"""
WORKER = """
import json, os, socket, time
while not os.path.exists(os.environ["GO"]):
    time.sleep(0.05)
config = json.loads(os.environ["TF_CONFIG"])
host, port = config["cluster"]["ps"][0].rsplit(":", 1)
with socket.create_connection((host, int(port)), timeout=10) as conn:
    conn.sendall(b"ping")
    print("worker reached ps:", conn.recv(16).decode(), flush=True)
with socket.socket(socket.AF_UNIX) as unix:
    unix.connect(os.environ["RUNNER_SOCKET"])
    unix.sendall(b"hello from the job's namespace")
"""


def _job(tmp_path: Path, marker: str) -> Path:
    env = [
        {"name": "GO", "value": str(tmp_path / "go")},
        {"name": "RUNNER_SOCKET", "value": str(tmp_path / "runner.sock")},
    ]
    job = tfjob(
        "private",
        {
            "PS": replica(PS + f"# {marker}"),
            "Worker": replica(WORKER + f"# {marker}", env=env),
        },
    )
    return write(tmp_path, job)


def _unix_listener(path: Path) -> tuple[list[bytes], threading.Thread]:
    """A Unix socket in this test's namespace; what the first client sends lands in the list."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    path.chmod(0o777)  # a replica running as another user may connect (its folder still rules)
    server.listen()
    server.settimeout(60)
    received: list[bytes] = []

    def accept() -> None:
        with server:
            conn, _ = server.accept()
            with conn:
                received.append(conn.recv(64))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    return received, thread


def _run_and_probe(
    tmp_path: Path, *extra: str, prefix: tuple[str, ...] = (), taas: Sequence[str] = TAAS
) -> tuple[dict[str, str], str, list[bytes]]:
    """Run the job, probe the PS's port from outside while it serves, let the job finish.
    Returns {address: probe outcome}, the runner's output, what the Unix socket received."""
    marker = token()
    received, listener = _unix_listener(tmp_path / "runner.sock")
    runner = Runner(_job(tmp_path, marker), *extra, prefix=prefix, taas=taas)
    try:
        runner.wait_for("listening")
        words = runner.line_with("listening").split()
        port, pid = words[words.index("listening") + 1 : words.index("listening") + 3]
        assert int(port) in listening_ports(int(pid)), "the PS serves in its own namespace"
        outcomes = {host: probe(host, int(port)) for host in ["127.0.0.1", *host_addresses()]}
        assert Path(f"/proc/{pid}").exists(), "the PS kept serving while it was probed"
        (tmp_path / "go").touch()
        code, output = runner.finish(timeout=60)
    finally:
        runner.kill()
        kill_marked(marker)
    listener.join(10)
    assert code == 0, output
    assert condition(final_status(output, "private"), "Succeeded")["status"] == "True"
    assert "worker reached ps: pong" in output, output
    return outcomes, output, received


def test_a_replica_is_unreachable_from_outside_its_job(tmp_path: Path) -> None:
    """Default: refused on 127.0.0.1 and on every address of this machine; the worker still
    reaches the PS and the job Succeeds; a Unix socket path crosses the namespace (the channel
    left for the runner to talk to replicas)."""
    outcomes, output, received = _run_and_probe(tmp_path)
    assert set(outcomes.values()) == {"refused"}, outcomes
    kind = "network namespace" if os.geteuid() == 0 else "user + network namespace"
    assert f"{PRIVATE_NOTE} ({kind})" in output, output
    assert received == [b"hello from the job's namespace"]


def test_host_network_opts_out_and_the_port_is_then_reachable(tmp_path: Path) -> None:
    """--host-network: the same probe connects, which is what the private network prevents."""
    outcomes, output, _ = _run_and_probe(tmp_path, "--host-network")
    assert set(outcomes.values()) == {"connected"}, outcomes
    assert "--host-network: the replicas use this machine's network" in output


@pytest.mark.skipif(os.geteuid() != 0, reason="as non-root the default test is this path")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs util-linux setpriv")
def test_without_capabilities_a_user_namespace_keeps_it_private(tmp_path: Path) -> None:
    """No CAP_SYS_ADMIN (bounding set emptied): the runner falls back from a plain network
    namespace to a user namespace owning one; still refused from outside, still Succeeded."""
    outcomes, output, received = _run_and_probe(tmp_path, prefix=tuple(NO_CAPABILITIES))
    assert set(outcomes.values()) == {"refused"}, outcomes
    assert f"{PRIVATE_NOTE} (user + network namespace)" in output, output
    assert received == [b"hello from the job's namespace"]


def _nobody_python() -> list[str]:
    """`python` as nobody, with this environment's packages on PYTHONPATH; skips when this
    machine has no interpreter of this Python's version that nobody may run."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    paths = [
        *site.getsitepackages(),
        str(Path(taas_operator.__file__).parents[1]),  # the editable install's sources
    ]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(paths), "HOME": "/tmp"}
    for python in (sys.executable, shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")):
        if python is None:
            continue
        check = [*AS_NOBODY, "env", "-i", *(f"{k}={v}" for k, v in env.items()), python]
        done = subprocess.run(
            [*check, "-c", "import taas_operator.cli"], capture_output=True, timeout=60
        )
        if done.returncode == 0:
            return check
    pytest.skip(f"no {version} that nobody may run with this environment's packages")


@pytest.mark.skipif(os.geteuid() != 0, reason="as non-root the default test is this path")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs util-linux setpriv")
def test_as_nobody_a_user_namespace_keeps_it_private() -> None:
    """A non-root user: user + network namespace with its uid mapped to itself; the replicas
    run as nobody, refused from outside, the job Succeeds."""
    python = _nobody_python()
    scratch = Path(tempfile.mkdtemp(prefix="taas-nobody-"))
    try:
        scratch.chmod(0o777)
        taas = (*python, "-m", "taas_operator.cli")
        outcomes, output, received = _run_and_probe(scratch, taas=taas)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert set(outcomes.values()) == {"refused"}, outcomes
    assert f"{PRIVATE_NOTE} (user + network namespace)" in output, output
    assert received == [b"hello from the job's namespace"]
    assert "uid 65534" in next(line for line in output.splitlines() if "listening" in line)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs util-linux setpriv")
def test_where_no_namespace_can_be_made_one_warning_and_the_host_network(tmp_path: Path) -> None:
    """In a user namespace whose own limit of user namespaces is 0 and without capabilities,
    neither kind can be made: one warning line says why and what it means, the job runs on the
    host network (reachable, as the warning says) and Succeeds."""
    script = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    prefix = ("unshare", "--user", "--map-root-user", "sh", "-c", script, "sh", *NO_CAPABILITIES)
    outcomes, output, _ = _run_and_probe(tmp_path, prefix=prefix)
    assert set(outcomes.values()) == {"connected"}, outcomes
    warnings = [line for line in output.splitlines() if "no private network" in line]
    assert len(warnings) == 1, output
    assert warnings[0].startswith("taas: warning: no private network for the replicas (")
    assert "cannot create a user namespace with a network namespace" in warnings[0]
    assert "listen on every interface of this machine" in warnings[0]
    assert PRIVATE_NOTE not in output


@pytest.mark.tensorflow
@pytest.mark.timeout(240)
def test_tensorflow_servers_are_unreachable_while_mnist_trains(tmp_path: Path) -> None:
    """The real MNIST example: while its PS serves (TensorFlow's gRPC server, `*:<port>`),
    its port is refused from outside the job; the job trains on to Succeeded."""
    job = fresh_copy("examples/mnist/async.yaml", tmp_path)
    runner = Runner(job, "--quiet-table")
    try:
        runner.wait_for("serving at grpc://127.0.0.1:")
        port = int(runner.line_with("serving at grpc://").split("127.0.0.1:")[1].split(";")[0])
        pid = _ps_pid(runner.proc.pid)
        assert port in listening_ports(pid), "TensorFlow's server listens in the job's namespace"
        outcomes = {host: probe(host, port) for host in ["127.0.0.1", *host_addresses()]}
        assert Path(f"/proc/{pid}").exists(), "the PS kept serving while it was probed"
        code, output = runner.finish(timeout=200)
    finally:
        runner.kill()
    assert set(outcomes.values()) == {"refused"}, outcomes
    assert code == 0, output[-3000:]
    assert condition(final_status(output, "mnist-async"), "Succeeded")["status"] == "True"


def _ps_pid(runner_pid: int) -> int:
    """The pid of the MNIST parameter server among the runner's children (/proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        prefix = b"TF_CONFIG="
        config = next((e[len(prefix) :] for e in environ if e.startswith(prefix)), None)
        if int(stat[1]) == runner_pid and config and json.loads(config)["task"]["type"] == "ps":
            return int(entry.name)
    raise AssertionError("no parameter server process found")


UNIX_PROBE = """
import os, socket
said = []
places = (("file", os.environ["FILE_SOCKET"]), ("abstract", "\\0" + os.environ["NAME"]))
for kind, address in places:
    with socket.socket(socket.AF_UNIX) as unix:
        try:
            unix.connect(address)
            unix.sendall(b"from the job")
            said.append(kind + ":reached")
        except ConnectionRefusedError:
            said.append(kind + ":refused")
print("unix", " ".join(said), flush=True)
"""


def _abstract_listener(name: str) -> tuple[list[bytes], socket.socket]:
    """An abstract Unix socket (`@name`, no file) in this test's namespace, as X11 and D-Bus
    serve; what a client sends lands in the list."""
    server = socket.socket(socket.AF_UNIX)
    server.bind("\0" + name)
    server.listen()
    server.settimeout(0.5)
    received: list[bytes] = []

    def accept() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            received.append(conn.recv(64))

    threading.Thread(target=accept, daemon=True).start()
    return received, server


@pytest.mark.parametrize("capabilities", ["as is", "none"])
def test_a_replica_reaches_unix_socket_files_not_abstract_sockets(
    tmp_path: Path, capabilities: str
) -> None:
    """What docs/local.md says a replica reaches outside its job: Unix sockets bound to a file it
    may open (the namespace keeps only network and abstract sockets apart), and no abstract
    socket of the host (those belong to the network namespace). Both paths: a plain network
    namespace (root) and a user namespace (no capabilities, every non-root user's)."""
    if capabilities == "none" and (os.geteuid() != 0 or shutil.which("setpriv") is None):
        pytest.skip("the default run is already the user-namespace path (or no setpriv)")
    name = f"taas-test-{token()}"
    received, listener = _unix_listener(tmp_path / "host.sock")
    abstract, server = _abstract_listener(name)
    env = [
        {"name": "FILE_SOCKET", "value": str(tmp_path / "host.sock")},
        {"name": "NAME", "value": name},
    ]
    job = write(tmp_path, tfjob("unix", {"Worker": replica(UNIX_PROBE, env=env)}))
    prefix = tuple(NO_CAPABILITIES) if capabilities == "none" else ()
    runner = Runner(job, prefix=prefix)
    try:
        code, output = runner.finish(timeout=60)
    finally:
        runner.kill()
        listener.join(10)
        server.close()
    assert code == 0, output
    assert PRIVATE_NOTE in output, output
    assert "unix file:reached abstract:refused" in output, output
    assert received == [b"from the job"] and abstract == []
