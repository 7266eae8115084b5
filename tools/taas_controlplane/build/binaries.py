"""Build the control-plane binaries from Go modules, once, into a cache keyed by version.

Nothing here downloads a release: kube-apiserver and etcd are built from the small wrapper
modules under `go/` (their go.mod pins the upstream versions), Helm and Kubeflow's
training-operator with `go install module@version`, and modules whose go.mod has replace
directives (scheduler-plugins' scheduler and controller, Kueue) with `go build` inside their
extracted source. Each binary lands in
`$TAAS_CACHE_DIR/bin/<name>-<version>-<key>/<name>` (default `~/.cache/taas`), where `key` hashes
the inputs of the build, so a version bump or an edited wrapper rebuilds and nothing else does.
`module_source(module, version)` gives the source tree of any Go module from the module cache
(e.g. Kubeflow's TFJob CRD for the migration tests).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

GO_DIR = Path(__file__).resolve().parent / "go"
MIN_GO = (1, 24)


class BuildError(RuntimeError):
    """A binary could not be built; the message says what to install or where the log is."""


class GoBinary(BaseModel):
    """How to build one binary."""

    name: str
    version: str
    module_dir: str | None = None  # a wrapper module under go/, built with `go build`
    install_path: str | None = None  # else `go install <install_path>@<version>`
    # else a module with replace directives (`go install` refuses those): `go build <package>`
    # inside its extracted source (`module_source(module, version)`)
    module: str | None = None
    package: str = "."
    ldflags: str = ""


KUBERNETES_VERSION = "v1.34.4"
ETCD_VERSION = "v3.6.4"
HELM_VERSION = "v3.18.6"
TRAINING_OPERATOR_VERSION = "v1.8.1"
COREDNS_VERSION = "v1.12.4"
# kube-router's /v2 module is refused by the module proxy (403 for every release asked), so
# the last v1 release, which the proxy serves, is the NetworkPolicy enforcer.
KUBE_ROUTER_VERSION = "v1.6.1"
# kwok: the simulated nodes' kubelet (taas_controlplane.sim); v0.8.0 needs Go 1.26.
KWOK_VERSION = "v0.8.0"

# Gang scheduling (coscheduling's PodGroup) and queues: the last scheduler-plugins release whose
# every dependency the proxy serves, and Kueue's newest (the proxy's "latest" says v0.17.0).
SCHEDULER_PLUGINS_VERSION = "v0.33.5"
KUEUE_VERSION = "v0.19.2"
# The image registry of the cluster (taas_controlplane.cluster.registry): CNCF distribution.
REGISTRY_VERSION = "v3.1.2"
# Hyperparameter search (taas_controlplane.cluster.katib): v0.18.0 is refused by the proxy.
KATIB_VERSION = "v0.19.0"
# The clusters' storage class (taas_controlplane.cluster.storage): rancher's dynamic local-path
# volumes.
LOCAL_PATH_PROVISIONER_VERSION = "v0.0.30"

# Version stamps every Kubernetes binary carries (else they report v0.0.0-master).
_KUBE_LDFLAGS = " ".join(
    f"-X k8s.io/component-base/version.{key}={value}"
    for key, value in {
        "gitVersion": KUBERNETES_VERSION,
        "gitMajor": KUBERNETES_VERSION.lstrip("v").split(".")[0],
        "gitMinor": KUBERNETES_VERSION.lstrip("v").split(".")[1],
        "gitTreeState": "clean",
    }.items()
)
# The node's components, each from its own wrapper module under go/ (kube-apiserver's go.mod,
# renamed and tidied): one module per binary keeps each build key to its own inputs.
KUBE_COMPONENTS = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
)

BINARIES: dict[str, GoBinary] = {
    **{
        name: GoBinary(
            name=name, version=KUBERNETES_VERSION, module_dir=name, ldflags=_KUBE_LDFLAGS
        )
        for name in KUBE_COMPONENTS
    },
    "etcd": GoBinary(name="etcd", version=ETCD_VERSION, module_dir="etcd"),
    "helm": GoBinary(
        name="helm",
        version=HELM_VERSION,
        install_path="helm.sh/helm/v3/cmd/helm",
        # Helm's defaults for `.Capabilities.KubeVersion` (`helm template`) follow its client-go.
        ldflags=f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION}"
        " -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1"
        " -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=33",
    ),
    # The user's kubectl, the node's version: upstream's cmd/kubectl main in a wrapper module
    # (go/kubectl), built against the k8s.io/kubectl staging module of the same release.
    "kubectl": GoBinary(
        name="kubectl",
        version=KUBERNETES_VERSION,
        module_dir="kubectl",
        # `kubectl version` reports client-go's stamp, so both packages get one.
        ldflags=_KUBE_LDFLAGS
        + " "
        + _KUBE_LDFLAGS.replace("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"),
    ),
    "training-operator": GoBinary(
        name="training-operator",
        version=TRAINING_OPERATOR_VERSION,
        install_path="github.com/kubeflow/training-operator/cmd/training-operator.v1",
    ),
    # A wrapper with only the plugins the cluster's Corefile uses (kubernetes, health, ...):
    # CoreDNS's own main links every cloud provider's SDK.
    "coredns": GoBinary(name="coredns", version=COREDNS_VERSION, module_dir="coredns"),
    # A wrapper module running only kube-router's NetworkPolicy controller (go/kube-router says
    # why): `go install` asks the proxy for kube-router's version list, which it refuses.
    "kube-router": GoBinary(
        name="kube-router", version=KUBE_ROUTER_VERSION, module_dir="kube-router"
    ),
    "kwok": GoBinary(
        name="kwok",
        version=KWOK_VERSION,
        module="sigs.k8s.io/kwok",
        package="./cmd/kwok",
    ),
    "scheduler-plugins-scheduler": GoBinary(
        name="scheduler-plugins-scheduler",
        version=SCHEDULER_PLUGINS_VERSION,
        module="sigs.k8s.io/scheduler-plugins",
        package="./cmd/scheduler",
    ),
    "scheduler-plugins-controller": GoBinary(
        name="scheduler-plugins-controller",
        version=SCHEDULER_PLUGINS_VERSION,
        module="sigs.k8s.io/scheduler-plugins",
        package="./cmd/controller",
    ),
    "kueue": GoBinary(
        name="kueue",
        version=KUEUE_VERSION,
        module="sigs.k8s.io/kueue",
        package="./cmd/kueue",
        ldflags=f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={KUEUE_VERSION}",
    ),
    "registry": GoBinary(
        name="registry",
        version=REGISTRY_VERSION,
        install_path="github.com/distribution/distribution/v3/cmd/registry",
        ldflags=f"-X github.com/distribution/distribution/v3/version.version={REGISTRY_VERSION}",
    ),
    "local-path-provisioner": GoBinary(
        name="local-path-provisioner",
        version=LOCAL_PATH_PROVISIONER_VERSION,
        install_path="github.com/rancher/local-path-provisioner",
        ldflags="-X main.VERSION=" + LOCAL_PATH_PROVISIONER_VERSION,
    ),
    **{
        name: GoBinary(
            name=name, version=KATIB_VERSION, module="github.com/kubeflow/katib", package=package
        )
        for name, package in {
            "katib-controller": "./cmd/katib-controller/v1beta1",
            "katib-db-manager": "./cmd/db-manager/v1beta1",
            "katib-suggestion-goptuna": "./cmd/suggestion/goptuna/v1beta1",
            "katib-file-metricscollector": "./cmd/metricscollector/v1beta1/file-metricscollector",
        }.items()
    },
}


def cache_root() -> Path:
    """Where built binaries live (`TAAS_CACHE_DIR`, default `~/.cache/taas`)."""
    return Path(os.environ.get("TAAS_CACHE_DIR", Path.home() / ".cache" / "taas"))


def _build_key(spec: GoBinary) -> str:
    # The module fields only where used: every other binary keeps the key it had before them.
    unused = {"module", "package"} if spec.module is None else set()
    digest = hashlib.sha256(spec.model_dump_json(exclude=unused).encode())
    if spec.module_dir:
        for path in sorted((GO_DIR / spec.module_dir).iterdir()):
            if path.suffix in {".go", ".mod", ".sum"}:
                digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:12]


def binary_path(name: str) -> Path:
    """Where `name` is (or will be) in the cache."""
    spec = BINARIES[name]
    return cache_root() / "bin" / f"{name}-{spec.version}-{_build_key(spec)}" / name


def _go_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", **(extra or {}))
    return env


def check_go() -> str:
    """Return the Go executable, or raise a BuildError saying what to install."""
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "Go toolchain not found on PATH. TaaS builds kube-apiserver, etcd and Helm from Go "
            f"modules and needs Go >= {MIN_GO[0]}.{MIN_GO[1]}: install it (e.g. "
            "`apt-get install golang-go` if new enough, or Go from your package registry) and "
            "run again."
        )
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False)
    match = re.match(r"go(\d+)\.(\d+)", out.stdout.strip())
    if not match or (int(match[1]), int(match[2])) < MIN_GO:
        raise BuildError(
            f"{go} reports {out.stdout.strip() or out.stderr.strip()!r}; Go >= "
            f"{MIN_GO[0]}.{MIN_GO[1]} is needed to build the control plane. Install a newer Go."
        )
    return go


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _say(message: str) -> None:
    print(f"[taas-controlplane] {message}", file=sys.stderr, flush=True)


def _run_with_progress(
    cmd: list[str], cwd: Path, log: Path, label: str, total: int, env: dict[str, str] | None = None
) -> None:
    """Run a `go build -v`-style command; each stderr line is a package: show a running count."""
    started = time.monotonic()
    done = 0
    last_report = started
    with log.open("w") as log_file:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=_go_env(env), stdout=log_file, stderr=subprocess.PIPE, text=True
        )
        assert proc.stderr is not None
        for line in proc.stderr:
            log_file.write(line)
            done += 1
            now = time.monotonic()
            if now - last_report >= 10:
                last_report = now
                shown = f"{done}/{total}" if total else str(done)
                _say(f"{label}: {shown} packages compiled, {now - started:.0f}s elapsed")
        code = proc.wait()
    if code != 0:
        tail = "".join(log.read_text().splitlines(keepends=True)[-15:])
        raise BuildError(
            f"building {label} failed (exit {code}); full log: {log}\n{tail}\n"
            "Check that the Go module proxy is reachable (`go env GOPROXY`) and that there is "
            "~2 GiB of free memory, then run again."
        )
    _say(f"{label}: built in {time.monotonic() - started:.0f}s")


def _count_packages(go: str, cwd: Path, target: str) -> int:
    out = subprocess.run(
        [go, "list", "-deps", target], cwd=cwd, env=_go_env(), capture_output=True, text=True
    )
    return len(out.stdout.splitlines()) if out.returncode == 0 else 0


def ensure(name: str) -> Path:
    """Return the path of binary `name`, building it first when the cache lacks it."""
    if name not in BINARIES:
        raise BuildError(f"unknown binary {name!r}; known: {', '.join(sorted(BINARIES))}")
    target = binary_path(name)
    if target.exists():
        return target
    spec = BINARIES[name]
    with _lock(cache_root() / "locks" / f"{name}.lock"):
        if target.exists():  # another process built it while we waited
            return target
        go = check_go()
        label = f"{name} {spec.version}"
        staging = target.parent.with_name(target.parent.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        log = staging / "build.log"
        _say(f"building {label} from Go modules (first time only; cached in {target.parent})")
        if spec.module_dir:
            cwd = GO_DIR / spec.module_dir
            _say(f"{label}: downloading modules")
            dl = subprocess.run(
                [go, "mod", "download"], cwd=cwd, env=_go_env(), capture_output=True, text=True
            )
            if dl.returncode != 0:
                raise BuildError(
                    f"`go mod download` for {label} failed:\n{dl.stderr[-2000:]}\n"
                    "Check that the Go module proxy is reachable (`go env GOPROXY`)."
                )
            total = _count_packages(go, cwd, ".")
            cmd = [go, "build", "-v", "-ldflags", spec.ldflags, "-o", str(staging)]
            _run_with_progress([*cmd, "."], cwd, log, label, total)
        elif spec.module:
            _say(f"{label}: downloading {spec.module}")
            cwd = module_source(spec.module, spec.version)
            total = _count_packages(go, cwd, spec.package)
            cmd = [go, "build", "-v", "-ldflags", spec.ldflags, "-o", str(staging / name)]
            _run_with_progress([*cmd, spec.package], cwd, log, label, total)
        else:
            env_dir = staging / "gopath-bin"
            cmd = [go, "install", "-v", "-ldflags", spec.ldflags]
            cmd.append(f"{spec.install_path}@{spec.version}")
            _run_with_progress(cmd, staging, log, label, 0, {"GOBIN": str(env_dir)})
            built = next(env_dir.iterdir())
            built.rename(staging / name)
            shutil.rmtree(env_dir)
        shutil.rmtree(target.parent, ignore_errors=True)
        staging.rename(target.parent)
    return target


def module_source(module: str, version: str) -> Path:
    """The source tree of Go module `module@version` in the module cache (downloaded if absent).

    Runs `go mod download -json module@version`; the files under the returned directory are
    read-only. Raises BuildError when Go is missing or the download fails.
    """
    go = check_go()
    target = f"{module}@{version}"
    cwd = cache_root()
    cwd.mkdir(parents=True, exist_ok=True)  # outside any go.mod, so no module context applies
    done = subprocess.run(
        [go, "mod", "download", "-json", target],
        cwd=cwd,
        env=_go_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        info = json.loads(done.stdout) if done.stdout.strip() else {}
    except json.JSONDecodeError:
        info = {}
    directory = info.get("Dir")
    if done.returncode != 0 or info.get("Error") or not directory:
        why = info.get("Error") or done.stderr.strip()[-2000:] or f"exit {done.returncode}"
        raise BuildError(
            f"`go mod download {target}` failed: {why}\n"
            "Check the module path and version, and that the Go module proxy is reachable "
            "(`go env GOPROXY`)."
        )
    return Path(directory)


def main(names: list[str]) -> int:
    """Build the named binaries (all control-plane ones by default); print their paths."""
    try:
        for name in names or ["etcd", "kube-apiserver"]:
            print(ensure(name))
    except BuildError as err:
        _say(f"error: {err}")
        return 1
    return 0
