{{/*
Rules for the objects the operator manages inside a watched namespace, shared by the
cluster-wide ClusterRole and the per-namespace Roles. Argument: dict "ha" (bool) adds the
namespaced kopf peering objects (leader election when watching a list of namespaces).
*/}}
{{- define "taas.workloadRules" -}}
# TFJobs: kopf lists and watches them, patches its bookkeeping annotations and finalizer, and
# the operator deletes a finished job after spec.runPolicy.ttlSecondsAfterFinished.
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs"]
  verbs: ["get", "list", "watch", "patch", "update", "delete"]
# TFJob status (conditions, replicaStatuses) is written through the status subresource.
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs/status"]
  verbs: ["get", "patch", "update"]
# Owner references with blockOwnerDeletion on pods/services need update on the owner's
# finalizers subresource (OwnerReferencesPermissionEnforcement admission).
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs/finalizers"]
  verbs: ["patch", "update"]
# One pod per replica: created, watched for phase and exit codes, deleted on restart/cleanup,
# patched to adopt orphans.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
# One headless Service per replica, giving TF_CONFIG its stable host names.
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "delete"]
# Events on TFJobs (kopf posts through the core API; the operator may use events.k8s.io).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
# One NetworkPolicy per TFJob: TensorFlow's gRPC ports admit only pods of the same job.
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
{{- if .ha }}
# Leader election between replicas: kopf reads and patches the KopfPeering object here.
- apiGroups: ["kopf.dev"]
  resources: ["kopfpeerings"]
  verbs: ["get", "list", "watch", "patch"]
{{- end }}
{{- end }}
