"""The chart and manifests against a real kube-apiserver (tests/conftest.py `control_plane`).

- every render passes a server-side dry-run apply (schema, RBAC escalation checks, admission);
- the chart's RBAC, bound for real, gives the ServiceAccount exactly the rules the operator
  needs (SelfSubjectRulesReview as the ServiceAccount) and refuses secrets and the rest
  (SubjectAccessReview);
- the example TFJobs, Kubeflow's own example included, are accepted by the TFJob CRD, and the
  pods the operator makes for each pass the `restricted` Pod Security Standard (the apiserver's
  own PodSecurity admission, on by default), as does the operator's pod in the install namespace;
- `helm install` / `upgrade` / `uninstall` for real, adopting an existing TFJob CRD.

Nothing is mocked; no operator runs here (its lifecycle under this identity is tested with the
controller). Cluster-scoped objects get unique names and are deleted afterwards; the session's
control plane has no garbage collector or namespace controller.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.api import parse_tfjob
from taas_operator.api.constants import DEFAULT_NODE_LOST_TOLERATION_SECONDS
from taas_operator.planner import BuildOptions, desired_pods
from tests.crds import wait_established
from tests.deploy.rendered import CLUSTER_RULES, WORKLOAD_RULES, Docs, Rule, of_kind
from tests.deploy.sync_chart import CHART, CRD_SOURCE, INSTALL_YAML, NAMESPACE

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]

EXAMPLES = sorted((INSTALL_YAML.parent / "examples").glob("*.yaml"))
# every example file holding a TFJob (examples/gang/kueue-priorities.yaml holds only Kueue's
# priority classes)
EVERY_EXAMPLE = sorted(
    path
    for path in [*EXAMPLES, *(INSTALL_YAML.parents[1] / "examples").glob("*/*.yaml")]
    if re.search(r"^kind:\s*TFJob\s*$", path.read_text(), re.MULTILINE)
)
# Kubeflow's documentation example, kept byte for byte (it shows that TaaS takes Kubeflow's
# manifests unchanged); it sets no securityContext, so it needs a `baseline` namespace.
KUBEFLOW_VERBATIM = "kubeflow-tfjob-simple.yaml"
PSS = "pod-security.kubernetes.io/enforce"
FIELD_MANAGER = "taas-deploy-tests"
# Rules every authenticated user has (system:basic-user, system:discovery): not the chart's.
BUILT_IN_GROUPS = {"authorization.k8s.io", "authentication.k8s.io"}


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _apply(plane: ControlPlane, text: str, *extra: str) -> str:
    """Server-side apply of a multi-document YAML; returns kubectl's output, fails with it."""
    done = plane.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        f"--field-manager={FIELD_MANAGER}",
        *extra,
        "-f",
        "-",
        input=text,
        check=False,
    )
    assert done.returncode == 0, f"kubectl apply failed:\n{done.stderr}\n{done.stdout}"
    return done.stdout


def _ensure_namespace(plane: ControlPlane, name: str, labels: dict[str, str] | None = None) -> None:
    """Create a namespace that may already exist (shared across tests; never deleted)."""
    meta: dict[str, Any] = {"name": name, **({"labels": labels} if labels else {})}
    _apply(plane, yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": meta}))


def _install_crd(plane: ControlPlane, text: str, name: str) -> None:
    """Apply a CRD for real and wait until the apiserver serves it."""
    _apply(plane, text)
    wait_established(plane, name)


def _api(kubeconfig: str) -> client.AuthorizationV1Api:
    return client.AuthorizationV1Api(config.new_client_from_config(config_file=kubeconfig))


@pytest.fixture
def cluster_scoped_cleanup(control_plane: ControlPlane) -> Iterator[list[str]]:
    """Collects `kind/name` of cluster-scoped objects a test created, and deletes them."""
    created: list[str] = []
    yield created
    for ref in created:
        control_plane.kubectl("delete", ref, "--ignore-not-found", "--wait=false", check=False)


def test_install_yaml_passes_server_side_dry_run(control_plane: ControlPlane) -> None:
    """manifests/install.yaml (the chart with defaults) as `kubectl apply --dry-run=server`."""
    _ensure_namespace(control_plane, NAMESPACE)
    text = INSTALL_YAML.read_text()
    out = _apply(control_plane, text, "--dry-run=server")
    objects = [doc for doc in yaml.safe_load_all(text) if doc]
    assert out.count("serverside-applied (server dry run)") == len(objects) >= 9, out
    assert "deployment.apps/taas serverside-applied" in out


def test_ha_namespaced_render_passes_server_side_dry_run(
    control_plane: ControlPlane, render_docs: Callable[..., Docs]
) -> None:
    """replicaCount 2 + a namespace list: Roles, RoleBindings and KopfPeering objects too (the
    kopf peering CRDs from crds/ installed for real first, as Helm does)."""
    ops, team_a, team_b = _unique("ops"), _unique("team-a"), _unique("team-b")
    for name in (ops, team_a, team_b):
        _ensure_namespace(control_plane, name)
    for crd in yaml.safe_load_all((CHART / "crds" / "kopf-peerings.yaml").read_text()):
        _install_crd(control_plane, yaml.safe_dump(crd), crd["metadata"]["name"])
    docs = render_docs(
        "replicaCount=2", f"watchNamespaces={{{team_a},{team_b}}}", namespace=ops, release="ha"
    )
    assert len(of_kind(docs, "KopfPeering")) == 2 and len(of_kind(docs, "Role")) == 2
    out = _apply(control_plane, yaml.safe_dump_all(docs), "--dry-run=server")
    assert out.count("(server dry run)") == len(docs), out


@pytest.mark.parametrize("mode", ["cluster-wide", "namespaced"])
def test_service_account_gets_exactly_the_operator_rules(
    control_plane: ControlPlane,
    render_docs: Callable[..., Docs],
    cluster_scoped_cleanup: list[str],
    mode: str,
) -> None:
    """Bind the chart's RBAC for real; as the ServiceAccount, the apiserver's own rules review
    lists exactly the expected rules in a watched namespace, and access reviews refuse secrets,
    other verbs, and (namespaced mode) every namespace not in the list."""
    home, watched, other = _unique("taas"), _unique("team"), _unique("other")
    for name in (home, watched, other):
        _ensure_namespace(control_plane, name)
    release = _unique("rbac")
    values = [] if mode == "cluster-wide" else [f"watchNamespaces={{{watched}}}"]
    docs = render_docs(*values, namespace=home, release=release)
    rbac_kinds = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
    rbac = [doc for doc in docs if doc["kind"] in rbac_kinds]
    cluster_scoped_cleanup.extend(
        f"{doc['kind'].lower()}/{doc['metadata']['name']}"
        for doc in rbac
        if doc["kind"].startswith("Cluster")
    )
    _apply(control_plane, yaml.safe_dump_all(rbac))
    sa_name = of_kind(docs, "ServiceAccount")[0]["metadata"]["name"]
    user = f"system:serviceaccount:{home}:{sa_name}"
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{home}"]

    as_sa = _api(control_plane.kubeconfig_for(user, groups))
    review = as_sa.create_self_subject_rules_review(
        client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace=watched))
    )
    assert review.status is not None
    granted = _expand(review.status.resource_rules)
    assert granted == WORKLOAD_RULES | CLUSTER_RULES, _rule_diff(granted)

    admin = _api(control_plane.kubeconfig)
    cases: list[tuple[str, str, str, str, bool]] = [
        *((g, r, v, watched, True) for g, r, v in sorted(WORKLOAD_RULES)),
        *((g, r, v, "", True) for g, r, v in sorted(CLUSTER_RULES)),
        ("", "secrets", "get", watched, False),
        ("", "secrets", "list", watched, False),
        ("", "secrets", "watch", "", False),
        ("", "configmaps", "get", watched, False),
        ("", "pods/exec", "create", watched, False),
        ("", "pods", "update", watched, False),
        ("", "services", "patch", watched, False),
        ("kubeflow.org", "tfjobs", "create", watched, False),
        ("apps", "deployments", "update", watched, False),
        ("", "namespaces", "delete", "", False),
        ("apiextensions.k8s.io", "customresourcedefinitions", "update", "", False),
        ("rbac.authorization.k8s.io", "clusterroles", "escalate", "", False),
        ("", "nodes", "list", "", False),
        ("coordination.k8s.io", "leases", "update", watched, False),
    ]
    if mode == "namespaced":
        cases += [
            ("", "pods", "create", other, False),
            ("kubeflow.org", "tfjobs", "list", "", False),
            ("networking.k8s.io", "networkpolicies", "create", other, False),
        ]
    for group, resource, verb, namespace, expected in cases:
        outcome = _can(admin, user, groups, group, resource, verb, namespace)
        assert outcome == expected, (
            f"{user} {'may not' if expected else 'may'} {verb} {group or 'core'}/{resource} "
            f"in {namespace or 'all namespaces'}"
        )


def test_example_tfjobs_are_accepted(control_plane: ControlPlane) -> None:
    """Each manifests/examples TFJob, Kubeflow's docs example unchanged among them, is accepted
    by the TFJob CRD on the real apiserver (server-side dry-run, so no operator acts on it)."""
    _install_crd(control_plane, CRD_SOURCE.read_text(), "tfjobs.kubeflow.org")
    namespace = _unique("examples")
    _ensure_namespace(control_plane, namespace)
    assert any(path.name.startswith("kubeflow-") for path in EXAMPLES)
    for path in EXAMPLES:
        # One TFJob each, with the PersistentVolumeClaim of its model directory where it has one.
        docs = list(yaml.safe_load_all(path.read_text()))
        (job,) = [d for d in docs if d["kind"] == "TFJob"]
        assert job["apiVersion"] == "kubeflow.org/v1", path.name
        assert {d["kind"] for d in docs} <= {"TFJob", "PersistentVolumeClaim"}, path.name
        target = job["metadata"].get("namespace", namespace)
        _ensure_namespace(control_plane, target)
        for doc in docs:
            done = control_plane.kubectl(
                "create", "--dry-run=server", "-n", target, "-o", "json", "-f", "-",
                input=json.dumps(doc), check=False,
            )  # fmt: skip
            assert done.returncode == 0, f"{path.name} refused:\n{done.stderr}"
            if doc is job:
                stored = json.loads(done.stdout)
        assert stored["spec"]["tfReplicaSpecs"].keys() == job["spec"]["tfReplicaSpecs"].keys()


#: What the operator's default settings give every pod beyond the template (a lost node's
#: tolerations).
OPERATOR_DEFAULTS = BuildOptions(node_lost_toleration_seconds=DEFAULT_NODE_LOST_TOLERATION_SECONDS)


def _operator_pods(path: Path, namespace: str) -> list[dict[str, Any]]:
    """The pods the operator creates for the TFJob(s) of an example file, in `namespace`."""
    pods = []
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "TFJob":
            doc["metadata"]["namespace"] = namespace
            pods += desired_pods(parse_tfjob(doc), OPERATOR_DEFAULTS)
    return pods


def _create_dry_run(plane: ControlPlane, namespace: str, objects: list[dict[str, Any]]) -> Any:
    """`kubectl create --dry-run=server` of `objects` in `namespace`: every admission runs."""
    text = yaml.safe_dump_all(objects)
    return plane.kubectl(
        "create", "--dry-run=server", "-n", namespace, "-f", "-", input=text, check=False
    )


def test_example_pods_pass_the_restricted_pod_security_standard(
    control_plane: ControlPlane,
) -> None:
    """In a namespace enforcing `restricted`, the apiserver admits the operator's pods for every
    example TFJob (examples/ and manifests/examples); a pod without the securityContext is
    refused there, so admission really checks; Kubeflow's verbatim example needs `baseline`."""
    restricted, baseline = _unique("restricted"), _unique("baseline")
    _ensure_namespace(control_plane, restricted, {PSS: "restricted"})
    _ensure_namespace(control_plane, baseline, {PSS: "baseline"})
    assert len(EVERY_EXAMPLE) >= 8
    for path in EVERY_EXAMPLE:
        pods = _operator_pods(path, restricted)
        assert pods, path
        done = _create_dry_run(control_plane, restricted, pods)
        if path.name == KUBEFLOW_VERBATIM:
            assert done.returncode != 0, "Kubeflow's example was admitted under restricted"
            assert 'violates PodSecurity "restricted:latest"' in done.stderr, done.stderr
            done = _create_dry_run(control_plane, baseline, _operator_pods(path, baseline))
        assert done.returncode == 0, f"{path.name} refused:\n{done.stderr}"
        assert done.stdout.count("created (server dry run)") == len(pods), done.stdout
        for pod in pods:
            assert pod["spec"].get("automountServiceAccountToken") is False or (
                path.name == KUBEFLOW_VERBATIM
            ), f"{path.name}: TensorFlow needs no API token"
    bare = _operator_pods(INSTALL_YAML.parent / "examples" / "mnist-ps-worker.yaml", restricted)
    for pod in bare:
        del pod["spec"]["securityContext"]
    refused = _create_dry_run(control_plane, restricted, bare[:1])
    assert refused.returncode != 0 and "runAsNonRoot != true" in refused.stderr, refused.stderr


def test_operator_pod_passes_restricted_in_the_install_namespace(
    control_plane: ControlPlane,
) -> None:
    """install.yaml's Namespace enforces `restricted`; the operator's pod (the Deployment's
    template) is admitted there by the apiserver's PodSecurity admission."""
    docs = [doc for doc in yaml.safe_load_all(INSTALL_YAML.read_text()) if doc]
    namespace = next(doc for doc in docs if doc["kind"] == "Namespace")
    labels = namespace["metadata"]["labels"]
    assert {labels[f"pod-security.kubernetes.io/{m}"] for m in ("enforce", "audit", "warn")} == {
        "restricted"
    }
    target = _unique("taas-install")
    _ensure_namespace(control_plane, target, labels)
    template = next(doc for doc in docs if doc["kind"] == "Deployment")["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod", **template}
    pod["metadata"] = {**template["metadata"], "name": "operator", "namespace": target}
    done = _create_dry_run(control_plane, target, [pod])
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr  # warn=restricted: no warning either


def _expand(resource_rules: list[Any]) -> set[Rule]:
    """(group, resource, verb) of a rules review, without the rules every user has."""
    return {
        (group, resource, verb)
        for rule in resource_rules
        for group in rule.api_groups or [""]
        for resource in rule.resources or []
        for verb in rule.verbs
        if group not in BUILT_IN_GROUPS
    }


def _rule_diff(granted: set[Rule]) -> str:
    expected = WORKLOAD_RULES | CLUSTER_RULES
    return f"extra: {sorted(granted - expected)}; missing: {sorted(expected - granted)}"


def _can(
    admin: client.AuthorizationV1Api,
    user: str,
    groups: list[str],
    group: str,
    resource: str,
    verb: str,
    namespace: str,
) -> bool:
    """SubjectAccessReview: may `user` do `verb` on `group/resource` in `namespace`?"""
    name, _, subresource = resource.partition("/")
    attributes = client.V1ResourceAttributes(
        group=group, resource=name, subresource=subresource or None, verb=verb, namespace=namespace
    )
    spec = client.V1SubjectAccessReviewSpec(
        user=user, groups=[*groups, "system:authenticated"], resource_attributes=attributes
    )
    review = admin.create_subject_access_review(client.V1SubjectAccessReview(spec=spec))
    assert review.status is not None
    return bool(review.status.allowed)


def test_helm_install_upgrade_uninstall_adopting_an_existing_crd(
    control_plane: ControlPlane, helm: Path, cluster_scoped_cleanup: list[str]
) -> None:
    """The documented adoption path for real: the TFJob CRD already exists (as Kubeflow's would),
    `helm install --set crds.install=false` with two replicas (peering CRDs from crds/, peering
    object), `helm upgrade` to one replica, `helm uninstall`: the CRD is never touched."""
    _install_crd(control_plane, CRD_SOURCE.read_text(), "tfjobs.kubeflow.org")
    crd_uid = _crd_uid(control_plane)
    namespace, release = _unique("helm"), _unique("adopt")
    fullname = f"{release}-taas"
    cluster_scoped_cleanup += [
        f"clusterrole/{fullname}",
        f"clusterrole/{fullname}-cluster",
        f"clusterrolebinding/{fullname}",
        f"clusterrolebinding/{fullname}-cluster",
        f"clusterkopfpeering.kopf.dev/{fullname}",
    ]

    def run_helm(*args: str) -> str:
        done = subprocess.run(
            [str(helm), "--kubeconfig", control_plane.kubeconfig, "-n", namespace, *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"helm {args[0]} failed:\n{done.stderr}"
        return done.stdout

    run_helm(
        "install", release, str(CHART), "--create-namespace",
        "--set", "crds.install=false", "--set", "replicaCount=2",
    )  # fmt: skip
    deployment = _get(control_plane, "deployment", fullname, namespace)
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    assert _get(control_plane, "clusterkopfpeering.kopf.dev", fullname)

    run_helm("upgrade", release, str(CHART), "--reuse-values", "--set", "replicaCount=1")
    deployment = _get(control_plane, "deployment", fullname, namespace)
    assert deployment["spec"]["strategy"]["type"] == "Recreate"
    assert not _get(control_plane, "clusterkopfpeering.kopf.dev", fullname)

    run_helm("uninstall", release, "--wait", "--timeout", "60s")
    assert not _get(control_plane, "clusterrole", fullname)
    assert not _get(control_plane, "deployment", fullname, namespace)
    assert _crd_uid(control_plane) == crd_uid, "the TFJob CRD must survive the release"


def _get(plane: ControlPlane, kind: str, name: str, namespace: str = "") -> dict[str, Any]:
    """The object as a dict, or {} when it does not exist."""
    scope = ["-n", namespace] if namespace else []
    done = plane.kubectl("get", kind, name, *scope, "-o", "json", "--ignore-not-found")
    return json.loads(done.stdout) if done.stdout.strip() else {}


def _crd_uid(plane: ControlPlane) -> str:
    return str(_get(plane, "crd", "tfjobs.kubeflow.org")["metadata"]["uid"])
