{{/*
Rules for the objects the operator manages inside a watched namespace, shared by the
cluster-wide ClusterRole and the per-namespace Roles. Argument: dict "ha" (bool) adds the
namespaced kopf peering objects (leader election when watching a list of namespaces); "gang"
(gangScheduling.schedulerName, non-empty) adds scheduler-plugins' PodGroups; "kueue"
(kueue.podGroups) adds patch on pods.
*/}}
{{- define "taas.workloadRules" -}}
# TFJobs: the operator lists and watches them (its own watches; nothing is written on them but
# the status), GETs one on a cache miss and deletes a finished job after ttlSecondsAfterFinished.
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs"]
  verbs: ["get", "list", "watch", "delete"]
# TFJob status (conditions, replicaStatuses) is replaced through the status subresource.
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs/status"]
  verbs: ["update"]
# Owner references with blockOwnerDeletion on pods/services need update on the owner's
# finalizers subresource where OwnerReferencesPermissionEnforcement admission is on.
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs/finalizers"]
  verbs: ["update"]
# One pod per replica: listed and watched for phase and exit codes, created, deleted on
# restart/cleanup.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch", "create", "delete"]
# One headless Service per replica, giving TF_CONFIG its stable host names; a TFJob's
# TensorBoard Service is read when its name is taken (an earlier incarnation's, or its own).
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "delete"]
# Events on TFJobs for every transition and every refused input (core API).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
# One NetworkPolicy per TFJob: TensorFlow's gRPC ports admit only pods of the same job;
# patch puts back a hand-edited policy. A TensorBoard's own policy (no pod admitted) is
# created once and read when its name is taken.
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
# TensorBoard for a TFJob annotated taas.dev/tensorboard=true: one Deployment (with the Service
# above), created once; read only when its name is taken (deleted with the job by the GC).
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "create"]
{{- if .gang }}
# Gang scheduling (gangScheduling.schedulerName): one PodGroup per TFJob, created, read when its
# name is taken, its spec patched when the job's wants change (deleted with the job by the GC).
- apiGroups: ["scheduling.x-k8s.io"]
  resources: ["podgroups"]
  verbs: ["get", "create", "patch"]
{{- end }}
{{- if .kueue }}
# Kueue's pod groups (kueue.podGroups): Kueue's finalizer removed from an ended pod the operator
# replaces, and a finished run's pods marked kueue.x-k8s.io/retriable-in-group: "false".
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["patch"]
{{- end }}
{{- if .ha }}
# Leader election between replicas: kopf patches the KopfPeering object here (its keepalive),
# the operator reads it for kopf's decision.
- apiGroups: ["kopf.dev"]
  resources: ["kopfpeerings"]
  verbs: ["get", "list", "watch", "patch"]
{{- end }}
{{- end }}
