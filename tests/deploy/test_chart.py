"""The Helm chart rendered by real Helm: lint, schema, values -> objects, RBAC scope, drift.

No cluster is needed here; tests/deploy/test_on_apiserver.py sends the same renders to a real
kube-apiserver.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_operator.settings import OperatorSettings
from tests.deploy.rendered import (
    CLUSTER_RULES,
    PEERING_VERBS,
    WORKLOAD_RULES,
    Docs,
    container_env,
    of_kind,
    one,
    operator_roles,
    rules,
    user_roles,
)
from tests.deploy.sync_chart import (
    CHART,
    CRD_COPY,
    CRD_SOURCE,
    INSTALL_YAML,
    RenderError,
    expected_install_yaml,
    render,
)

pytestmark = pytest.mark.timeout(180)

Render = Callable[..., Docs]


def test_lint_is_clean(helm: Path) -> None:
    """`helm lint --strict` reports no warning or error, with defaults and with every option on."""
    for values in [(), ("replicaCount=2", "watchNamespaces={a,b}", "crds.install=false")]:
        out = render(*values, helm=helm, command="lint")
        assert "0 chart(s) failed" in out
        assert "[WARNING]" not in out and "[ERROR]" not in out, out


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--set", "replicaCount=two", "at '/replicaCount': got string, want integer"),
        ("--set", "crds.install=maybe", "at '/crds/install': got string, want boolean"),
        ("--set", "watchNamespaces=team-a", "at '/watchNamespaces': got string, want array"),
        ("--set", "logLevel=LOUD", "at '/logLevel'"),
        ("--set", "replicaCount=0", "at '/replicaCount'"),
        ("--set", "networkPolicy.enable=false", "additional properties 'enable' not allowed"),
        ("--set", "watchNamespaces={Team_A}", "at '/watchNamespaces/0'"),
        ("--set", "namespace.podSecurity.enforce=strict", "at '/namespace/podSecurity/enforce'"),
        ("--set", "operatorNetworkPolicy.scrapers[0].namespace=x", "additional properties"),
        ("--set", "healthHost=localhost", "at '/healthHost'"),
        ("--set", "gangScheduling.schedulerName=volcano", "at '/gangScheduling/schedulerName'"),
        ("--set", "pods.nodeLostTolerationSeconds=-1", "at '/pods/nodeLostTolerationSeconds'"),
        (
            "--set",
            "operator.nodeLostTolerationSeconds=5m",
            "at '/operator/nodeLostTolerationSeconds'",
        ),
    ],
)
def test_schema_rejects_bad_values_naming_them(
    helm: Path, flag: str, value: str, expected: str
) -> None:
    """A wrong type, range or unknown key fails the render with Helm's message naming it."""
    with pytest.raises(RenderError) as error:
        render(value, helm=helm)
    assert "values don't meet the specifications of the schema" in str(error.value)
    assert expected in str(error.value)


def test_defaults_render_cluster_wide_operator(render_docs: Render) -> None:
    """Defaults: one standalone replica (Recreate), hardened pod, every namespace watched."""
    docs = render_docs()
    deployment = one(docs, "Deployment")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    container = pod["containers"][0]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    assert pod["serviceAccountName"] == "taas" == one(docs, "ServiceAccount")["metadata"]["name"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    hardened = container["securityContext"]
    assert hardened["readOnlyRootFilesystem"] is True
    assert hardened["allowPrivilegeEscalation"] is False
    assert hardened["capabilities"] == {"drop": ["ALL"]}
    assert container["args"] == ["operator"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["image"] == "ghcr.io/taas-dev/taas-operator:0.1.0"
    env = container_env(docs)
    assert env["TAAS_NAMESPACES"] == "[]" and env["TAAS_PEERING"] == ""
    assert env["TAAS_NETWORK_POLICY"] == "true"
    service = one(docs, "Service")
    assert service["spec"]["selector"] == spec["selector"]["matchLabels"]
    assert one(docs, "CustomResourceDefinition")["metadata"]["name"] == "tfjobs.kubeflow.org"
    assert not of_kind(docs, "ClusterKopfPeering") and not of_kind(docs, "KopfPeering")


def test_values_reach_the_operator_environment(render_docs: Render) -> None:
    """Every operator setting in values becomes its TAAS_* variable, in the settings' format."""
    docs = render_docs(
        "clusterDomain=cluster.local",
        "logLevel=DEBUG",
        "concurrency=4",
        "healthPort=9090",
        "networkPolicy.enabled=false",
        "networkPolicy.extraNamespaces={monitoring,tensorboard}",
        "watchNamespaces={team-a}",
        "image.tag=dev",
        "nodeSelector.pool=system",
    )
    env = container_env(docs)
    assert env["TAAS_CLUSTER_DOMAIN"] == "cluster.local"
    assert env["TAAS_LOG_LEVEL"] == "DEBUG" and env["TAAS_CONCURRENCY"] == "4"
    assert env["TAAS_HEALTH_PORT"] == "9090" and env["TAAS_NETWORK_POLICY"] == "false"
    assert yaml.safe_load(env["TAAS_NETWORK_POLICY_EXTRA_NAMESPACES"]) == [
        "monitoring",
        "tensorboard",
    ]
    assert yaml.safe_load(env["TAAS_NAMESPACES"]) == ["team-a"]
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["ports"][0]["containerPort"] == 9090
    assert pod["containers"][0]["image"].endswith(":dev")
    assert pod["nodeSelector"] == {"pool": "system"}


def test_env_values_parse_as_operator_settings(render_docs: Render) -> None:
    """The rendered TAAS_* variables are accepted by the operator's own OperatorSettings."""
    from taas_operator.settings import OperatorSettings

    env = container_env(render_docs("watchNamespaces={a,b}", "replicaCount=2"))
    taas_env = {key: value for key, value in env.items() if key.startswith("TAAS_")}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in taas_env.items():
            patch.setenv(key, value)
        settings = OperatorSettings()
    assert settings.namespaces == ["a", "b"] and settings.peering == "taas"
    assert settings.network_policy is True and settings.health_port == 8080


#: Every operator setting -> (its chart value, a `--set` that changes it, the setting it gives).
#: `peering` has no value of its own: more than one replica turns it on (named after the release).
CHART_VALUES: dict[str, tuple[str, str, object]] = {
    "namespaces": ("watchNamespaces", "watchNamespaces={team-a}", ["team-a"]),
    "cluster_domain": ("clusterDomain", "clusterDomain=cluster.local", "cluster.local"),
    "concurrency": ("concurrency", "concurrency=4", 4),
    "log_level": ("logLevel", "logLevel=DEBUG", "DEBUG"),
    "peering": ("replicaCount", "replicaCount=2", "taas"),
    "health_port": ("healthPort", "healthPort=9090", 9090),
    "health_host": ("healthHost", "healthHost=0.0.0.0", "0.0.0.0"),
    "metrics_port": ("metricsPort", "metricsPort=9091", 9091),
    "progress": ("progress.enabled", "progress.enabled=false", False),
    "progress_interval": ("progress.intervalSeconds", "progress.intervalSeconds=60", 60),
    "operator_namespace": ("operatorNamespace", "operatorNamespace=ops", "ops"),
    "network_policy": ("networkPolicy.enabled", "networkPolicy.enabled=false", False),
    "network_policy_extra_namespaces": (
        "networkPolicy.extraNamespaces",
        "networkPolicy.extraNamespaces={mon}",
        ["mon"],
    ),
    "gang_scheduler_name": (
        "gangScheduling.schedulerName",
        "gangScheduling.schedulerName=scheduler-plugins",
        "scheduler-plugins",
    ),
    "gang_pod_scheduler_name": (
        "gangScheduling.podSchedulerName",
        "gangScheduling.podSchedulerName=coscheduler",
        "coscheduler",
    ),
    "tensorboard_image": (
        "tensorboard.image",
        "tensorboard.image=registry.example/tb:1",
        "registry.example/tb:1",
    ),
    "node_lost_toleration_seconds": (
        "pods.nodeLostTolerationSeconds",
        "pods.nodeLostTolerationSeconds=45",
        45,
    ),
    "kueue_pod_groups": ("kueue.podGroups", "kueue.podGroups=true", True),
    "tensorboard_allow_from": (
        "tensorboard.allowFrom",
        "tensorboard.allowFrom={10.0.0.5/32}",
        ["10.0.0.5/32"],
    ),
    "max_job_bytes": ("maxJobBytes", "maxJobBytes=1073741824", 1073741824),
    "creating_per_namespace": (
        "fairness.creatingPerNamespace",
        "fairness.creatingPerNamespace=5",
        5,
    ),
    "namespace_weights": (
        "fairness.namespaceWeights",
        "fairness.namespaceWeights={team-a=4}",
        ["team-a=4"],
    ),
}


def _env_source(docs: Docs, name: str) -> dict[str, Any]:
    """The `valueFrom` of one env entry of the operator container."""
    container = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return next(e["valueFrom"] for e in container["env"] if e["name"] == name)


def _settings_from(env: dict[str, str]) -> OperatorSettings:
    """OperatorSettings from exactly the rendered TAAS_* variables."""
    with pytest.MonkeyPatch.context() as patch:
        for key in [k for k in os.environ if k.startswith("TAAS_")]:
            patch.delenv(key)
        for key, value in env.items():
            if key.startswith("TAAS_"):
                patch.setenv(key, value)
        return OperatorSettings()


def test_every_setting_reaches_the_chart(render_docs: Render) -> None:
    """Each OperatorSettings field has a value in values.yaml and values.schema.json and a
    TAAS_* variable in the Deployment; the chart's defaults are the operator's defaults, and
    changing each value changes that setting. Two deliberate exceptions: by default the chart
    sets the health host to the pod's IP (downward API) where the operator alone uses
    127.0.0.1, so the kubelet's probes reach it; and the operator's namespace to the release
    namespace (downward API) where the operator alone has none, so each job's NetworkPolicy
    admits the operator to the chief's progress port."""
    assert set(CHART_VALUES) == set(OperatorSettings.model_fields), (
        "a setting without chart wiring: add it to charts/taas (values.yaml, "
        "values.schema.json, templates/deployment.yaml) and to CHART_VALUES"
    )
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    template = (CHART / "templates" / "deployment.yaml").read_text()
    for name, (path, _, _) in CHART_VALUES.items():
        node, properties = values, schema["properties"]
        for part in path.split("."):
            assert part in node, f"{name}: {path} missing in values.yaml"
            assert part in properties, f"{name}: {path} missing in values.schema.json"
            node, prop = node[part], properties[part]
            properties = prop.get("properties", {})
        assert "type" in prop, f"{name}: {path} has no type in values.schema.json"
        assert f"- name: TAAS_{name.upper()}\n" in template, f"{name}: not in deployment.yaml"

    assert _settings_from(container_env(render_docs())) == OperatorSettings()
    assert _env_source(render_docs(), "TAAS_HEALTH_HOST") == {
        "fieldRef": {"fieldPath": "status.podIP"}
    }
    assert _env_source(render_docs(), "TAAS_OPERATOR_NAMESPACE") == {
        "fieldRef": {"fieldPath": "metadata.namespace"}
    }
    changed = _settings_from(container_env(render_docs(*(s for _, s, _ in CHART_VALUES.values()))))
    for name, (_, assignment, expected) in CHART_VALUES.items():
        assert getattr(changed, name) == expected, f"{assignment} did not reach {name}"


def test_the_tensorboard_image_follows_the_operator_image(render_docs: Render) -> None:
    """Unset, tensorboard.image is the trainer image beside image.repository, same tag: one
    --set moves both to a cluster's registry."""
    env = container_env(render_docs())
    assert env["TAAS_TENSORBOARD_IMAGE"] == "ghcr.io/taas-dev/taas-trainer:0.1.0"
    moved = container_env(
        render_docs("image.repository=10.245.0.1:5000/taas/taas-operator", "image.tag=0.2.0")
    )
    assert moved["TAAS_TENSORBOARD_IMAGE"] == "10.245.0.1:5000/taas/taas-trainer:0.2.0"
    bare = container_env(render_docs("image.repository=taas-operator"))
    assert bare["TAAS_TENSORBOARD_IMAGE"] == "taas-trainer:0.1.0"


def test_cluster_wide_rbac_is_exactly_what_the_operator_uses(render_docs: Render) -> None:
    """Watching every namespace: ClusterRoles grant exactly the needed rules, no Role exists."""
    docs = render_docs()
    granted = set().union(*(rules(role) for role in operator_roles(docs)))
    assert granted == WORKLOAD_RULES | CLUSTER_RULES
    assert not of_kind(docs, "Role") and not of_kind(docs, "RoleBinding")
    for binding in of_kind(docs, "ClusterRoleBinding"):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "taas", "namespace": "taas-system"}
        ]


def test_namespaced_mode_renders_roles_not_cluster_roles(render_docs: Render) -> None:
    """A namespace list: workload rules only in a Role per namespace; the one ClusterRole holds
    only the cluster-scoped reads kopf needs at start-up."""
    docs = render_docs("watchNamespaces={team-a,team-b}", namespace="ops", release="ml")
    cluster_roles = operator_roles(docs)
    assert [role["metadata"]["name"] for role in cluster_roles] == ["ml-taas-cluster"]
    assert rules(cluster_roles[0]) == CLUSTER_RULES
    roles = of_kind(docs, "Role")
    assert sorted(role["metadata"]["namespace"] for role in roles) == ["team-a", "team-b"]
    for role in roles:
        assert rules(role) == WORKLOAD_RULES
    for binding in of_kind(docs, "RoleBinding"):
        assert binding["roleRef"]["kind"] == "Role"
        assert binding["subjects"][0] == {
            "kind": "ServiceAccount",
            "name": "ml-taas",
            "namespace": "ops",
        }


def test_no_rule_touches_secrets_or_uses_wildcards(render_docs: Render) -> None:
    """In every mode: no secrets, no `*`, no escalate/bind/impersonate."""
    for values in [(), ("replicaCount=2",), ("replicaCount=2", "watchNamespaces={a}")]:
        docs = render_docs(*values)
        for role in of_kind(docs, "ClusterRole") + of_kind(docs, "Role"):
            for group, resource, verb in rules(role):
                assert "secrets" not in resource and "*" not in (group, resource, verb)
                assert verb not in {"escalate", "bind", "impersonate"}


@pytest.mark.parametrize(
    ("values", "peering_kind", "peering_resource", "role_kind"),
    [
        ((), "ClusterKopfPeering", "clusterkopfpeerings", "ClusterRole"),
        (("watchNamespaces={a,b}",), "KopfPeering", "kopfpeerings", "Role"),
    ],
)
def test_replicas_above_one_turn_on_peering(
    render_docs: Render,
    values: tuple[str, ...],
    peering_kind: str,
    peering_resource: str,
    role_kind: str,
) -> None:
    """replicaCount 2: kopf peering name set, peering objects rendered, RBAC to patch them, and a
    rolling update (one replica is active at a time)."""
    docs = render_docs("replicaCount=2", *values)
    assert container_env(docs)["TAAS_PEERING"] == "taas"
    strategy = one(docs, "Deployment")["spec"]["strategy"]
    assert strategy["type"] == "RollingUpdate"
    peerings = of_kind(docs, peering_kind)
    assert peerings and {p["metadata"]["name"] for p in peerings} == {"taas"}
    expected = {("kopf.dev", peering_resource, verb) for verb in PEERING_VERBS}
    holders = of_kind(docs, role_kind)
    if role_kind == "ClusterRole":  # cluster-wide: in the cluster-scoped start-up role
        holders = [role for role in holders if role["metadata"]["name"] == "taas-cluster"]
    assert holders and all(expected <= rules(role) for role in holders)


def test_peering_crds_ship_in_crds_dir() -> None:
    """kopf's peering CRDs are in crds/ (installed before the peering objects that need them)."""
    crds_dir = Path(INSTALL_YAML).parents[1] / "charts" / "taas" / "crds"
    names = {
        doc["metadata"]["name"]
        for path in crds_dir.glob("*.yaml")
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    }
    assert names == {"clusterkopfpeerings.kopf.dev", "kopfpeerings.kopf.dev"}


def test_crds_install_false_renders_no_crd(render_docs: Render) -> None:
    """crds.install=false (adopting Kubeflow's CRD and its TFJobs) renders no CRD at all."""
    assert not of_kind(render_docs("crds.install=false"), "CustomResourceDefinition")
    assert not of_kind(
        render_docs("crds.install=false", "replicaCount=2"), "CustomResourceDefinition"
    )


def test_chart_crd_is_the_manifests_crd(render_docs: Render) -> None:
    """The chart's CRD copy is byte-identical to manifests/crd, and the rendered CRD equals it
    apart from the chart's labels and the keep annotation."""
    assert CRD_COPY.read_bytes() == CRD_SOURCE.read_bytes(), (
        "charts/taas/files/crds drifted from manifests/crd; run: python tests/deploy/sync_chart.py"
    )
    source = yaml.safe_load(CRD_SOURCE.read_text())
    rendered = copy.deepcopy(one(render_docs(), "CustomResourceDefinition"))
    meta = rendered["metadata"]
    assert meta["annotations"].pop("helm.sh/resource-policy") == "keep"
    for key in list(meta["labels"]):
        if key not in source["metadata"].get("labels", {}):
            del meta["labels"][key]
    for field in ("labels", "annotations"):
        if not meta[field] and field not in source["metadata"]:
            del meta[field]
    # JSON text, so an integer that came back as a float (1 vs 1.0) counts as a difference.
    assert json.dumps(rendered, sort_keys=True) == json.dumps(source, sort_keys=True)


def test_install_yaml_has_not_drifted(helm: Path) -> None:
    """manifests/install.yaml is exactly the chart rendered with defaults and its Namespace."""
    assert INSTALL_YAML.read_text() == expected_install_yaml(helm=helm), (
        "manifests/install.yaml drifted from charts/taas; run: python tests/deploy/sync_chart.py"
    )


def test_operator_pods_get_a_network_policy_of_their_own(render_docs: Render) -> None:
    """Default: ingress to the operator's pods is closed (the node, which Kubernetes always
    admits, probes them); scrapers open the health and metrics ports only, to exactly those
    peers."""
    docs = render_docs()
    selector = one(docs, "Deployment")["spec"]["selector"]["matchLabels"]
    policy = one(docs, "NetworkPolicy")["spec"]
    assert policy == {
        "podSelector": {"matchLabels": selector},
        "policyTypes": ["Ingress"],
        "ingress": [],
    }
    monitoring = {"kubernetes.io/metadata.name": "monitoring"}
    prometheus = {"app.kubernetes.io/name": "prometheus"}
    docs = render_docs(
        f"operatorNetworkPolicy.scrapers[0].namespaceSelector.matchLabels.{_key(monitoring)}",
        f"operatorNetworkPolicy.scrapers[0].podSelector.matchLabels.{_key(prometheus)}",
    )
    (rule,) = one(docs, "NetworkPolicy")["spec"]["ingress"]
    assert rule == {
        "ports": [{"port": "http", "protocol": "TCP"}, {"port": "metrics", "protocol": "TCP"}],
        "from": [
            {
                "namespaceSelector": {"matchLabels": monitoring},
                "podSelector": {"matchLabels": prometheus},
            }
        ],
    }
    ports = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert [p["name"] for p in ports] == ["http", "metrics"]  # the ports the rule names
    assert not of_kind(render_docs("operatorNetworkPolicy.enabled=false"), "NetworkPolicy")


def _key(labels: dict[str, str]) -> str:
    """`key=value` for --set, dots in the key escaped."""
    ((key, value),) = labels.items()
    return f"{key.replace('.', chr(92) + '.')}={value}"


def test_namespace_with_pod_security_labels_on_request(render_docs: Render) -> None:
    """namespace.create renders the release namespace labelled for Pod Security (restricted by
    default, kept on uninstall); by default the chart renders no Namespace."""
    assert not of_kind(render_docs(), "Namespace")
    namespace = one(render_docs("namespace.create=true", namespace="ml-ops"), "Namespace")
    assert namespace["metadata"]["name"] == "ml-ops"
    assert namespace["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    labels = namespace["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
        assert labels[f"pod-security.kubernetes.io/{mode}-version"] == "latest"
    relaxed = render_docs("namespace.create=true", "namespace.podSecurity.enforce=baseline")
    assert one(relaxed, "Namespace")["metadata"]["labels"][
        "pod-security.kubernetes.io/enforce"
    ] == ("baseline")


def test_metrics_port_on_the_service_and_an_optional_service_monitor(render_docs: Render) -> None:
    """The Service exposes `metrics` next to `http`; the ServiceMonitor is off by default and,
    on, scrapes that port of exactly this release's Service; metricsPort=0 removes the port
    everywhere (and a ServiceMonitor asked for then fails the render, naming why)."""
    docs = render_docs()
    service = one(docs, "Service")
    assert [(p["name"], p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [
        ("http", 8080, "http"),
        ("metrics", 8081, "metrics"),
    ]
    assert container_env(docs)["TAAS_METRICS_PORT"] == "8081"
    assert not of_kind(docs, "ServiceMonitor")
    docs = render_docs("serviceMonitor.enabled=true", "serviceMonitor.labels.release=prom")
    monitor = one(docs, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    assert monitor["spec"]["endpoints"] == [
        {"port": "metrics", "path": "/metrics", "interval": "30s"}
    ]
    assert monitor["metadata"]["labels"]["release"] == "prom"
    off = render_docs("metricsPort=0")
    assert [p["name"] for p in one(off, "Service")["spec"]["ports"]] == ["http"]
    container = one(off, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert [p["name"] for p in container["ports"]] == ["http"]
    with pytest.raises(RenderError) as error:
        render_docs("metricsPort=0", "serviceMonitor.enabled=true")
    assert "serviceMonitor.enabled needs service.enabled=true and a metricsPort" in str(error.value)


def test_gang_scheduling_adds_only_the_pod_group_rule(render_docs: Render) -> None:
    """gangScheduling.schedulerName: the operator gets the flag and may get, create and patch
    PodGroups (nothing else); off by default, so the rules stay exactly the workload rules."""
    docs = render_docs("gangScheduling.schedulerName=scheduler-plugins")
    env = container_env(docs)
    assert env["TAAS_GANG_SCHEDULER_NAME"] == "scheduler-plugins"
    assert env["TAAS_GANG_POD_SCHEDULER_NAME"] == "scheduler-plugins-scheduler"
    granted = set().union(*(rules(role) for role in operator_roles(docs)))
    pod_groups = {("scheduling.x-k8s.io", "podgroups", v) for v in ("get", "create", "patch")}
    assert granted == WORKLOAD_RULES | CLUSTER_RULES | pod_groups
    namespaced = render_docs(
        "gangScheduling.schedulerName=scheduler-plugins", "watchNamespaces={team-a}"
    )
    (role,) = of_kind(namespaced, "Role")
    assert rules(role) == WORKLOAD_RULES | pod_groups


def test_kueue_pod_groups_add_only_patch_on_pods(render_docs: Render) -> None:
    """kueue.podGroups: the operator gets the setting and may patch pods (Kueue's finalizer,
    the retriable-in-group annotation), nothing else; off by default."""
    docs = render_docs("kueue.podGroups=true")
    assert container_env(docs)["TAAS_KUEUE_POD_GROUPS"] == "true"
    granted = set().union(*(rules(role) for role in operator_roles(docs)))
    assert granted == WORKLOAD_RULES | CLUSTER_RULES | {("", "pods", "patch")}
    (role,) = of_kind(render_docs("kueue.podGroups=true", "watchNamespaces={team-a}"), "Role")
    assert rules(role) == WORKLOAD_RULES | {("", "pods", "patch")}


def test_team_roles_aggregate_tfjob_rights_into_admin_edit_and_view(render_docs: Render) -> None:
    """rbac.aggregateToDefaultRoles (on by default): `edit` and `admin` gain every verb on TFJobs
    and set their scale, `view` reads them (and the PodGroups with gang scheduling); nothing
    about pods, secrets or anything else; off, no such role."""
    every = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
    reads = {"get", "list", "watch"}
    roles = {role["metadata"]["name"]: role for role in user_roles(render_docs())}
    assert set(roles) == {"taas-edit", "taas-view"}
    labels = {name: set(role["metadata"]["labels"]) for name, role in roles.items()}
    assert {"rbac.authorization.k8s.io/aggregate-to-edit",
            "rbac.authorization.k8s.io/aggregate-to-admin"} <= labels["taas-edit"]  # fmt: skip
    assert "rbac.authorization.k8s.io/aggregate-to-view" in labels["taas-view"]
    assert not any("aggregate-to-edit" in label for label in labels["taas-view"])
    assert rules(roles["taas-edit"]) == {("kubeflow.org", "tfjobs", v) for v in every} | {
        ("kubeflow.org", "tfjobs/status", "get")
    } | {("kubeflow.org", "tfjobs/scale", v) for v in ("get", "patch", "update")}
    assert rules(roles["taas-view"]) == {
        ("kubeflow.org", resource, v)
        for resource in ("tfjobs", "tfjobs/status", "tfjobs/scale")
        for v in reads
    }
    gang = {r["metadata"]["name"]: r for r in user_roles(
        render_docs("gangScheduling.schedulerName=scheduler-plugins"))}  # fmt: skip
    assert {("scheduling.x-k8s.io", "podgroups", v) for v in reads} <= rules(gang["taas-view"])
    assert not user_roles(render_docs("rbac.aggregateToDefaultRoles=false"))
