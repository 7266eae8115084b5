"""Names and defaults of the kubeflow.org/v1 TFJob API, in one place.

Everything here is a plain constant: the pydantic models, the CRD tests, the pod builder and the
planner all read the same values, so a label key or a default port is spelled once.
"""

from __future__ import annotations

from typing import Final, Literal

GROUP: Final = "kubeflow.org"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "TFJob"
PLURAL: Final = "tfjobs"

ReplicaType = Literal["PS", "Worker", "Chief", "Master", "Evaluator"]
#: Canonical replica types, in the order Kubeflow's status logic walks them.
REPLICA_TYPES: Final[tuple[ReplicaType, ...]] = ("Chief", "Evaluator", "Master", "PS", "Worker")
CHIEF_TYPES: Final = frozenset({"Chief", "Master"})
#: The most replicas of one type, and of all types together: every pod's TF_CONFIG lists every
#: replica's host, so a pod grows with the job (docs/tfjob-api.md, "How many replicas").
MAX_REPLICAS: Final = 5000
#: Largest number of seconds (and backoffLimit) a TFJob may give: Kubernetes' bound of a pod's
#: own activeDeadlineSeconds (int32), the CRD's `maximum` of each such field.
MAX_SECONDS: Final = 2**31 - 1
#: Most bytes of pods and services one TFJob may make by default (`planner.budget`): an eighth
#: of etcd's default 2 GiB quota, which the whole cluster shares.
DEFAULT_MAX_JOB_BYTES: Final = 256 * 2**20

RestartPolicy = Literal["Always", "OnFailure", "Never", "ExitCode"]
RESTART_POLICIES: Final = ("Always", "OnFailure", "Never", "ExitCode")
CleanPodPolicy = Literal["All", "Running", "None"]
CLEAN_POD_POLICIES: Final = ("All", "Running", "None")
SuccessPolicy = Literal["", "AllWorkers"]
SUCCESS_POLICIES: Final = ("", "AllWorkers")

DEFAULT_CONTAINER_NAME: Final = "tensorflow"
DEFAULT_PORT_NAME: Final = "tfjob-port"
DEFAULT_PORT: Final = 2222
DEFAULT_REPLICAS: Final = 1
DEFAULT_RESTART_POLICY: Final[RestartPolicy] = "Never"
#: TaaS default (Kubeflow's is None, which leaves PS pods running forever).
DEFAULT_CLEAN_POD_POLICY: Final[CleanPodPolicy] = "Running"

#: managedBy values this operator treats as its own (absent/empty also means ours).
MANAGED_BY_KUBEFLOW: Final = "kubeflow.org/training-operator"
MANAGED_BY_TAAS: Final = "taas.dev/tfjob-controller"
OWN_MANAGERS: Final = frozenset({"", MANAGED_BY_KUBEFLOW, MANAGED_BY_TAAS})

# Labels Kubeflow puts on pods and services.
CONTROLLER_NAME: Final = "tfjob-controller"
LABEL_OPERATOR_NAME: Final = "training.kubeflow.org/operator-name"
LABEL_JOB_NAME: Final = "training.kubeflow.org/job-name"
LABEL_REPLICA_TYPE: Final = "training.kubeflow.org/replica-type"
LABEL_REPLICA_INDEX: Final = "training.kubeflow.org/replica-index"
LABEL_JOB_ROLE: Final = "training.kubeflow.org/job-role"
#: TaaS's own: the TFJob's uid on each of its pods, so its Services and NetworkPolicy select only
#: this incarnation's pods (a job deleted and applied again keeps its name, not its uid).
LABEL_JOB_UID: Final = "taas.dev/job-uid"
JOB_ROLE_MASTER: Final = "master"

# Condition types.
COND_CREATED: Final = "Created"
COND_RUNNING: Final = "Running"
COND_RESTARTING: Final = "Restarting"
COND_SUCCEEDED: Final = "Succeeded"
COND_FAILED: Final = "Failed"
COND_SUSPENDED: Final = "Suspended"

# Condition / event reasons (Kubeflow's, prefixed with the kind).
REASON_CREATED: Final = "TFJobCreated"
REASON_RUNNING: Final = "TFJobRunning"
REASON_RESTARTING: Final = "TFJobRestarting"
REASON_SUCCEEDED: Final = "TFJobSucceeded"
REASON_FAILED: Final = "TFJobFailed"
REASON_SUSPENDED: Final = "TFJobSuspended"
REASON_RESUMED: Final = "TFJobResumed"
REASON_EXITED_WITH_CODE: Final = "ExitedWithCode"
REASON_TEMPLATE_RESTART_POLICY: Final = "SettedPodTemplateRestartPolicy"
REASON_INVALID_SPEC: Final = "InvalidTFJobSpec"
#: An object holds a name the job needs and no TFJob of that name controls it (left alone).
REASON_NOT_OWNED: Final = "ObjectNotOwned"
#: A pass over the job raised something no API error explains (an operator bug, or a value no
#: check bounded): the job fails with the error named, instead of a silent retry for ever.
REASON_PASS_FAILED: Final = "ReconcileFailed"
#: TaaS: the job's pods and services would take more of etcd than the operator allows.
REASON_TOO_LARGE: Final = "JobTooLarge"
REASON_WAITING_FOR_NAMES: Final = "WaitingForOldPods"
#: TaaS: Running False because the scheduler cannot place some replicas (its message quoted).
REASON_UNSCHEDULABLE: Final = "Unschedulable"
#: TaaS: the reason recorded for a replica recreated because its node was lost.
REASON_NODE_LOST: Final = "NodeLost"
#: TaaS: a gang-scheduled job whose pods the scheduler cannot yet place together.
REASON_WAITING_FOR_GANG: Final = "WaitingForGang"
#: TaaS: Running False while its namespace has `--creating-per-namespace` jobs being created.
REASON_NAMESPACE_CREATION_LIMIT: Final = "NamespaceCreationLimit"

# A lost node (`--node-lost-toleration-seconds`, `planner.tolerations`): the NoExecute taints the
# node lifecycle controller puts on a node that stopped answering (unreachable) or reports
# itself not ready, and how long a replica pod tolerates them unless its template says.
NODE_LOST_TAINTS: Final = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
#: Seconds: a gang whose member is lost trains no more anyway, so wait not Kubernetes' 300 s
#: (docs/tfjob-api.md, "A lost node").
DEFAULT_NODE_LOST_TOLERATION_SECONDS: Final = 30

# Gang scheduling with scheduler-plugins' coscheduling (`--gang-scheduler-name`).
GANG_SCHEDULER_PLUGINS: Final = "scheduler-plugins"
#: The schedulerName scheduler-plugins' own manifests give their scheduler.
DEFAULT_GANG_POD_SCHEDULER: Final = "scheduler-plugins-scheduler"
POD_GROUP_API_VERSION: Final = "scheduling.x-k8s.io/v1alpha1"
#: The label that makes a pod a member of the PodGroup it names.
LABEL_POD_GROUP: Final = "scheduling.x-k8s.io/pod-group"
#: TaaS: when it last changed the PodGroup's spec, written a moment after the change so that
#: coscheduling looks at a waiting gang again (`controller.reconcile.podgroups`).
ANNOTATION_POD_GROUP_CHANGED: Final = "taas.dev/pod-group-spec-changed"
#: TaaS: when it last wrote the PodGroup of a gang still waiting, so that coscheduling looks at
#: it again (a node may have become usable; `controller.reconcile.podgroups`).
ANNOTATION_GANG_RETRY: Final = "taas.dev/retry-gang"

# Kueue (`kueue.x-k8s.io`): what its `pod` integration reads on pods and writes on them
# (`--kueue-pod-groups`, `taas_operator.planner.kueue`).
KUEUE_QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL: Final = "kueue.x-k8s.io/priority-class"
KUEUE_GROUP_LABEL: Final = "kueue.x-k8s.io/pod-group-name"
KUEUE_TOTAL_COUNT_ANNOTATION: Final = "kueue.x-k8s.io/pod-group-total-count"
#: "false" on a pod of a group: the group ends once none of its pods runs or waits.
KUEUE_RETRIABLE_ANNOTATION: Final = "kueue.x-k8s.io/retriable-in-group"
#: Kueue's finalizer on the pods it manages (it counts their ends).
KUEUE_FINALIZER: Final = "kueue.x-k8s.io/managed"
#: Kueue's scheduling gate on a pod until it admits the pod's group.
KUEUE_GATE: Final = "kueue.x-k8s.io/admission"
#: The pod condition Kueue sets on the pods it stops (preemption, eviction), then deletes.
KUEUE_STOPPED_CONDITION: Final = "TerminationTarget"
#: TaaS: Running False while Kueue has not admitted the job's pod group.
REASON_WAITING_FOR_ADMISSION: Final = "WaitingForAdmission"
#: TaaS: Running False after Kueue stopped the job's pods (preemption, eviction).
REASON_EVICTED_BY_KUEUE: Final = "EvictedByKueue"
#: TaaS: Running False once Kueue admitted the group, until the pods run.
REASON_ADMITTED_BY_KUEUE: Final = "AdmittedByKueue"

# Training progress (TaaS): the chief of a job run with the trainer library publishes a JSON
# document (`taas_operator.api.progress_report.ProgressReport`): over HTTP at GET PROGRESS_PATH on
# TCP port $TAAS_PROGRESS_PORT (default DEFAULT_PROGRESS_PORT) in a pod, and into the file
# $TAAS_PROGRESS_FILE under `taas run`. The trainer (`taas.publish`) spells the same names.
# The operator declares that port on the chief's tensorflow container as PROGRESS_PORT_NAME
# and reads progress from the declared port of the pod, nowhere else.
PROGRESS_PORT_ENV: Final = "TAAS_PROGRESS_PORT"
PROGRESS_PORT_NAME: Final = "taas-progress"
PROGRESS_FILE_ENV: Final = "TAAS_PROGRESS_FILE"
DEFAULT_PROGRESS_PORT: Final = 2223
PROGRESS_PATH: Final = "/progress"

# TaaS: what losing one replica restarts ("job": every Chief/Master/Worker replica; "replica",
# the default: that one alone, as Kubeflow does; `taas_operator.tfjob.rules.restarts_whole`).
RESTART_SCOPE_ANNOTATION: Final = "taas.dev/restart-scope"
RESTART_SCOPES: Final = ("job", "replica")

# TensorBoard (TaaS): the annotation a TFJob asks for one with ("true": the operator runs one
# reading the chief's model_dir; an http(s) URL: a link to the user's own), and its port.
TENSORBOARD_ANNOTATION: Final = "taas.dev/tensorboard"
#: TaaS: on each pod the operator makes, HMAC-SHA256 of the pod's namespace, name and job uid
#: with the operator's adoption key: a pod is the job's only if it carries it (`controller.seen`).
MADE_BY_ANNOTATION: Final = "taas.dev/made-by"
TENSORBOARD_PORT: Final = 6006
#: The image the operator runs TensorBoard from by default: the trainer image (it has it).
DEFAULT_TENSORBOARD_IMAGE: Final = "ghcr.io/taas-dev/taas-trainer:0.1.0"
#: TaaS: the operator cannot run the TensorBoard a TFJob asks for (the model_dir's volume...).
REASON_TENSORBOARD_UNAVAILABLE: Final = "TensorBoardUnavailable"
REASON_TENSORBOARD_CREATED: Final = "TensorBoardCreated"
