"""One door to Kubernetes (`taas_operator.apiserver`): credentials found in kubectl's order,
the two audiences' messages of the one error hierarchy, and no HTTP client to the apiserver
anywhere else. Real kubeconfig files in a temporary home; no apiserver is asked (the in-cluster
step needs a pod's service-account files, so it is left to the deploy tests)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from taas_operator.apiserver import errors
from taas_operator.apiserver.credentials import load
from taas_operator.apiserver.errors import Request

PACKAGE = Path(__file__).resolve().parents[2] / "operator" / "taas_operator"


def kubeconfig(path: Path, server: str, namespace: str = "", contexts: int = 1) -> str:
    """A kubeconfig of a token user, `contexts` contexts (`c0` current), written to `path`."""
    ctx = [
        {
            "name": f"c{i}",
            "context": {"cluster": "k", "user": "u", **({"namespace": namespace} if i else {})},
        }
        for i in range(contexts)
    ]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "k", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "u", "user": {"token": "secret-token"}}],
        "contexts": ctx,
        "current-context": "c0",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return str(path)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return tmp_path


def test_credentials_are_found_in_kubectls_order(home: Path, monkeypatch: pytest.MonkeyPatch):
    default = kubeconfig(home / ".kube" / "config", "https://127.0.0.1:1001")
    assert load().server == "https://127.0.0.1:1001"
    assert load().source == f'kubeconfig "{default}"'
    from_env = kubeconfig(home / "env.yaml", "https://127.0.0.1:1002")
    monkeypatch.setenv("KUBECONFIG", from_env)
    assert load().server == "https://127.0.0.1:1002"
    flag = kubeconfig(home / "flag.yaml", "https://127.0.0.1:1003")
    assert load(flag).server == "https://127.0.0.1:1003"
    assert load(flag).endpoint.authorization() == "Bearer secret-token"


def test_context_and_its_namespace(home: Path) -> None:
    path = kubeconfig(home / "k.yaml", "https://127.0.0.1:1001", namespace="team", contexts=2)
    assert (load(path).context, load(path).namespace) == ("c0", "default")
    assert (load(path, "c1").context, load(path, "c1").namespace) == ("c1", "team")
    with pytest.raises(errors.ConfigError, match=r'has no context "c9" \(it has: c0, c1\)'):
        load(path, "c9")


def test_unusable_kubeconfigs_name_the_fix(home: Path) -> None:
    with pytest.raises(errors.ConfigError, match="does not exist; fix: pass --kubeconfig PATH"):
        load(str(home / "missing.yaml"))
    broken = home / "broken.yaml"
    broken.write_text("clusters: [")
    with pytest.raises(errors.ConfigError, match=f'cannot use kubeconfig "{broken}"'):
        load(str(broken))


def test_a_viewers_token_lends_nothing_of_the_base_identity(home: Path) -> None:
    base = load(kubeconfig(home / "k.yaml", "https://127.0.0.1:1001"))
    viewer = base.with_token("viewer-token")
    assert viewer.server == base.server and viewer.source == "a viewer's token"
    assert viewer.endpoint.authorization() == "Bearer viewer-token"
    assert viewer.endpoint.cert_file is None and viewer.endpoint.key_file is None


def test_one_hierarchy_two_audiences() -> None:
    """The same classes for the operator and a person, each with its own fix."""
    status = {"kind": "Status", "message": 'tfjobs is forbidden: User "x" cannot list'}
    operator = errors.operator_error(403, status, Request("list", "tfjobs", "ns"))
    person = errors.user_error(403, status, Request("list", "tfjobs", "ns"), "https://k", "k")
    assert type(operator) is type(person) is errors.Forbidden
    assert str(operator).startswith("forbidden: the operator may not list tfjobs in namespace ns")
    assert "fix: ask a cluster admin for a Role granting 'list' on tfjobs" in str(person)
    psa = {"message": 'pods "p" is forbidden: violates PodSecurity "restricted:latest": x (y)'}
    refused = errors.operator_error(403, psa, Request("create", "pods", "ns"))
    assert isinstance(refused, errors.PodSecurityRefused) and isinstance(refused, errors.Forbidden)
    assert refused.level == "restricted:latest" and refused.violations == "x (y)"
    gone = errors.user_error(
        404, {"details": {"name": "j"}}, Request("get", "tfjobs", "n", "j"), "", ""
    )
    assert isinstance(gone, errors.JobNotFound) and isinstance(gone, errors.NotFound)
    no_crd = errors.user_error(404, "404 page not found", Request("list", "tfjobs", "n"), "s", "")
    assert isinstance(no_crd, errors.CrdMissing) and "the TFJob CRD is not installed" in str(no_crd)
    taken = errors.user_error(409, {}, Request("create", "tfjobs", "n", "j"), "", "")
    assert isinstance(taken, errors.AlreadyExists) and isinstance(taken, errors.Conflict)
    assert issubclass(errors.Unreachable, errors.ApiError)


def test_nothing_but_the_package_opens_an_http_client() -> None:
    """No aiohttp ClientSession outside taas_operator.apiserver, but the controller's progress
    poller's (it reads the replicas' own publishers, not the apiserver); no urllib3, requests
    or official `kubernetes` import outside the package's credential loader."""
    opened, imported = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        text = path.read_text()
        if "ClientSession(" in text and not relative.startswith("apiserver/"):
            opened.append(relative)
        if re.search(r"^\s*(import|from) (kubernetes|urllib3|requests)\b", text, re.M):
            imported.append(relative)
    assert opened == ["controller/reconcile/progress_poller.py"]
    assert imported == ["apiserver/credentials.py"]
