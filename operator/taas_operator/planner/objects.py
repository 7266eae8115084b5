"""Desired Kubernetes objects of a TFJob, as plain manifests (dicts). Pure: no I/O.

    BuildOptions(cluster_domain="", hosts=None, gang_scheduler="", ...,
                 node_lost_toleration_seconds=0)
    replica_labels(job_name, replica_type, index) -> dict[str, str]
    job_selector(job_name) -> dict[str, str]              # labels of every pod/service of a job
    owner_reference(job) -> dict
    desired_pod(job, replica_type, index, options, cluster=None) -> dict
    desired_pods(job, options) -> list[dict]
    desired_service(job, replica_type, index) -> dict
    desired_services(job) -> list[dict]
    desired_network_policy(job, extra_namespaces=(), progress_namespace="") -> dict

Pods and headless services are named `<job>-<lowercase type>-<index>` and labelled like
Kubeflow's (operator-name, job-name, replica-type, replica-index; job-role=master on the pods
`taas_operator.tfjob.rules.is_master_role` names), the template's labels and annotations kept. The
`tensorflow` container gets the port `tfjob-port` (2222) when it has none, the chief's also
`taas-progress` (the port it serves progress on, `planner.progress.progress_port`; the only port
the operator reads progress from; none with hostNetwork, where the pod's IP is its node's), and
the cluster env
(TF_CONFIG when distributed, then PS_HOSTS, WORKER_HOSTS, CHIEF_HOSTS, JOB_NAME, TASK_INDEX) at
the front of its env list, so the user's own env and `$(VAR)` references in args can use them;
entries of the same names the user set are replaced. The pod's restartPolicy comes from the
replica's (ExitCode becomes Never). With gang scheduling on (`BuildOptions.gang_scheduler`), pods
carry the label `scheduling.x-k8s.io/pod-group: <job>` and the gang scheduler's schedulerName
unless the template names one (as Kubeflow's training-operator does; `planner.gang`). With
`BuildOptions.node_lost_toleration_seconds`, pods tolerate a lost node that long instead of
Kubernetes' 300 s, for each lost-node taint their template has no toleration of
(`planner.tolerations`).

`BuildOptions` holds every input that is not in the TFJob, as plain values (the operator fills
them from its settings): `hosts` picks the addresses in the cluster spec, by default the job's
services (`<svc>.<ns>.svc[.<cluster_domain>]:<port>`); the local runner passes a function
returning `127.0.0.1:<free port>` and reads the pods' env and command from these same manifests.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from taas_operator.api.constants import (
    API_VERSION,
    CONTROLLER_NAME,
    DEFAULT_CONTAINER_NAME,
    DEFAULT_GANG_POD_SCHEDULER,
    DEFAULT_PORT_NAME,
    GANG_SCHEDULER_PLUGINS,
    JOB_ROLE_MASTER,
    KIND,
    LABEL_JOB_NAME,
    LABEL_JOB_ROLE,
    LABEL_JOB_UID,
    LABEL_OPERATOR_NAME,
    LABEL_POD_GROUP,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    MADE_BY_ANNOTATION,
    PROGRESS_PORT_NAME,
    ReplicaType,
)
from taas_operator.api.models import TFJob
from taas_operator.planner.progress import chief_slot, progress_port
from taas_operator.planner.tolerations import node_lost_tolerations
from taas_operator.tfjob.cluster_spec import (
    ClusterEnv,
    HostFn,
    replica_name,
    replica_port,
    service_hosts,
)
from taas_operator.tfjob.rules import is_master_role


@dataclass(frozen=True)
class BuildOptions:
    """Inputs of the pod builder that are not in the TFJob."""

    cluster_domain: str = ""
    hosts: HostFn | None = None
    #: "" (off) or "scheduler-plugins": pods join the job's PodGroup (`planner.gang`) and go to
    #: `gang_pod_scheduler` unless their template names a scheduler.
    gang_scheduler: str = ""
    gang_pod_scheduler: str = DEFAULT_GANG_POD_SCHEDULER
    #: The pods of a TFJob labelled with a Kueue queue form one Kueue pod group (`planner.kueue`).
    kueue_pod_groups: bool = False
    #: The operator's adoption key: each pod carries `made_by_token` of it (b"": none, `taas
    #: run` and `taas render`).
    adoption_key: bytes = b""
    #: Seconds each pod tolerates a lost node (the not-ready / unreachable NoExecute taints)
    #: where its template has no toleration of them (`planner.tolerations`); 0: Kubernetes'.
    node_lost_toleration_seconds: int = 0

    def host_fn(self, job: TFJob) -> HostFn:
        """The host strategy for this job."""
        return self.hosts or service_hosts(job, self.cluster_domain)


def made_by_token(key: bytes, namespace: str, name: str, job_uid: str) -> str:
    """What the pod `namespace/name` of the job `job_uid` carries in `taas.dev/made-by`: only
    the holder of `key` can make it, so a pod someone else made with the job's ownerReference
    is never taken for the job's (`controller.seen`)."""
    text = f"{namespace}/{name}/{job_uid}".encode()
    return hmac.new(key, text, hashlib.sha256).hexdigest()


def job_selector(job_name: str) -> dict[str, str]:
    """Labels every pod and service of the job carries (use as a list label selector)."""
    return {LABEL_OPERATOR_NAME: CONTROLLER_NAME, LABEL_JOB_NAME: job_name}


def replica_labels(job_name: str, replica_type: str, index: int) -> dict[str, str]:
    """Labels of one replica's pod and service (pods add job-role where it applies)."""
    return {
        **job_selector(job_name),
        LABEL_REPLICA_TYPE: replica_type.lower(),
        LABEL_REPLICA_INDEX: str(index),
    }


def _incarnation(job: TFJob) -> dict[str, str]:
    """The uid label of this job's pods ({} where there is no uid: `taas run`)."""
    return {LABEL_JOB_UID: job.metadata.uid} if job.metadata.uid else {}


def owner_reference(job: TFJob) -> dict[str, Any]:
    """Controller owner reference to the TFJob (needs metadata.uid)."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": job.name,
        "uid": job.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _metadata(job: TFJob, name: str, labels: dict[str, str], annotations: dict[str, str]) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": job.namespace, "labels": labels}
    if annotations:
        meta["annotations"] = annotations
    if job.metadata.uid:
        meta["ownerReferences"] = [owner_reference(job)]
    return meta


def desired_pod(
    job: TFJob,
    replica_type: ReplicaType,
    index: int,
    options: BuildOptions | None = None,
    cluster: ClusterEnv | None = None,
) -> dict[str, Any]:
    """The pod manifest of one replica; `cluster`: the job's `ClusterEnv` when many pods are
    built at once (with `options`' hosts)."""
    options = options or BuildOptions()
    replica = job.spec.tf_replica_specs[replica_type]
    template = copy.deepcopy(replica.template)
    tmeta = template.get("metadata") or {}
    labels = {**(tmeta.get("labels") or {}), **replica_labels(job.name, replica_type, index)}
    labels.update(_incarnation(job))
    if is_master_role(job, replica_type, index):
        labels[LABEL_JOB_ROLE] = JOB_ROLE_MASTER
    annotations = dict(tmeta.get("annotations") or {})
    spec: dict[str, Any] = template.get("spec") or {}
    spec["restartPolicy"] = (
        "Never" if replica.restart_policy == "ExitCode" else replica.restart_policy
    )
    if options.gang_scheduler == GANG_SCHEDULER_PLUGINS:
        labels[LABEL_POD_GROUP] = job.name
        spec["schedulerName"] = spec.get("schedulerName") or options.gang_pod_scheduler
    if options.node_lost_toleration_seconds > 0:
        spec["tolerations"] = node_lost_tolerations(
            spec.get("tolerations") or [], options.node_lost_toleration_seconds
        )
    cluster = cluster or ClusterEnv(job, options.host_fn(job))
    env = cluster.env(replica_type, index)
    port = replica_port(replica)
    for container in spec.get("containers") or []:
        if container.get("name") != DEFAULT_CONTAINER_NAME:
            continue
        ports = container["ports"] = container.get("ports") or []
        if not any(p.get("name") == DEFAULT_PORT_NAME for p in ports):
            ports.append({"name": DEFAULT_PORT_NAME, "containerPort": port})
        if (replica_type, index) == chief_slot(job):
            ports[:] = [p for p in ports if p.get("name") != PROGRESS_PORT_NAME]
            if not spec.get("hostNetwork"):
                ports.append({"name": PROGRESS_PORT_NAME, "containerPort": progress_port(job)})
        ours = {e["name"] for e in env}
        container["env"] = env + [
            e for e in container.get("env") or [] if e.get("name") not in ours
        ]
        break
    name = replica_name(job.name, replica_type, index)
    if options.adoption_key and job.metadata.uid:
        token = made_by_token(options.adoption_key, job.namespace, name, job.metadata.uid)
        annotations[MADE_BY_ANNOTATION] = token
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(job, name, labels, annotations),
        "spec": spec,
    }


def desired_pods(job: TFJob, options: BuildOptions | None = None) -> list[dict[str, Any]]:
    """Every pod of the job, in Kubeflow's replica type order."""
    options = options or BuildOptions()
    cluster = ClusterEnv(job, options.host_fn(job))
    return [
        desired_pod(job, rtype, i, options, cluster)
        for rtype in job.replica_types()
        for i in range(job.spec.tf_replica_specs[rtype].replicas)
    ]


def _tf_container_ports(job: TFJob, replica_type: ReplicaType) -> list[dict[str, Any]]:
    """Named ports of the tensorflow container, tfjob-port included (defaulted)."""
    replica = job.spec.tf_replica_specs[replica_type]
    ports: list[dict[str, Any]] = []
    for container in replica.containers():
        if container.get("name") == DEFAULT_CONTAINER_NAME:
            ports = [p for p in container.get("ports") or [] if p.get("name")]
            break
    if not any(p.get("name") == DEFAULT_PORT_NAME for p in ports):
        ports = [*ports, {"name": DEFAULT_PORT_NAME, "containerPort": replica_port(replica)}]
    return ports


def desired_service(job: TFJob, replica_type: ReplicaType, index: int) -> dict[str, Any]:
    """Headless service of one replica, exposing the tensorflow container's named ports."""
    labels = replica_labels(job.name, replica_type, index)
    ports = [
        {
            "name": p["name"],
            "port": int(p["containerPort"]),
            "targetPort": int(p["containerPort"]),
            "protocol": p.get("protocol", "TCP"),
        }
        for p in _tf_container_ports(job, replica_type)
    ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(job, replica_name(job.name, replica_type, index), labels, {}),
        "spec": {
            "clusterIP": "None",
            # Only this incarnation's pod: a terminating pod of a deleted job of the same name
            # still carries the other labels, and publishNotReadyAddresses would resolve to it.
            "selector": {**labels, **_incarnation(job)},
            "ports": ports,
            # Peers resolve each other while starting, before any readiness.
            "publishNotReadyAddresses": True,
        },
    }


def desired_services(job: TFJob) -> list[dict[str, Any]]:
    """Every service of the job."""
    return [
        desired_service(job, rtype, i)
        for rtype in job.replica_types()
        for i in range(job.spec.tf_replica_specs[rtype].replicas)
    ]


def tf_ports(job: TFJob) -> list[int]:
    """The TensorFlow (tfjob-port) ports of every replica type, sorted, unique."""
    found = set()
    for rtype in job.replica_types():
        found.add(replica_port(job.spec.tf_replica_specs[rtype]))
    return sorted(found)


def _other_ports(job: TFJob, tf: list[int]) -> list[int]:
    found = set()
    for rtype in job.replica_types():
        for container in job.spec.tf_replica_specs[rtype].containers():
            for port in container.get("ports") or []:
                number = port.get("containerPort")
                if number and int(number) not in tf and port.get("protocol", "TCP") == "TCP":
                    found.add(int(number))
    return sorted(found)


def desired_network_policy(
    job: TFJob, extra_namespaces: Sequence[str] = (), progress_namespace: str = ""
) -> dict[str, Any]:
    """NetworkPolicy `<job>`: the TF ports admit only the job's own pods (and `extra_namespaces`).

    TensorFlow's gRPC servers are unauthenticated. Other ports the job's containers declare stay
    open to everyone (a policy that selects a pod denies all ingress it does not allow, so they
    are listed explicitly); ports no container declares are closed. With `progress_namespace`
    (the operator's own), that namespace is admitted to the chief's progress port (read-only
    training progress, `planner.progress`), unless a container already declares that port.
    """
    tf = tf_ports(job)
    peers: list[dict[str, Any]] = [{"podSelector": {"matchLabels": {LABEL_JOB_NAME: job.name}}}]
    if job.metadata.uid:
        # This incarnation's pods, and pods made before pods carried the uid label (a job
        # running across an operator upgrade); never a terminating pod of an earlier job.
        peers = [
            {"podSelector": {"matchLabels": {LABEL_JOB_NAME: job.name, **_incarnation(job)}}},
            {
                "podSelector": {
                    "matchLabels": {LABEL_JOB_NAME: job.name},
                    "matchExpressions": [{"key": LABEL_JOB_UID, "operator": "DoesNotExist"}],
                }
            },
        ]
    if extra_namespaces:
        peers.append(
            {
                "namespaceSelector": {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "In",
                            "values": sorted(set(extra_namespaces)),
                        }
                    ]
                }
            }
        )
    ingress: list[dict[str, Any]] = [
        {"from": peers, "ports": [{"protocol": "TCP", "port": p} for p in tf]}
    ]
    other = _other_ports(job, tf)
    if other:
        ingress.append({"ports": [{"protocol": "TCP", "port": p} for p in other]})
    progress = progress_port(job)
    if progress_namespace and progress not in tf and progress not in other:
        namespace = {"kubernetes.io/metadata.name": progress_namespace}
        ingress.append(
            {
                "from": [{"namespaceSelector": {"matchLabels": namespace}}],
                "ports": [{"protocol": "TCP", "port": progress}],
            }
        )
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(job, job.name, job_selector(job.name), {}),
        "spec": {
            "podSelector": {"matchLabels": job_selector(job.name)},
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }
