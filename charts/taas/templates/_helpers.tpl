{{/*
Names and labels shared by every template of the TaaS chart.
*/}}

{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "taas.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of the release's objects: the release name when it already contains the chart name
(`helm install taas ...` gives `taas`), else `<release>-<chart>`.
*/}}
{{- define "taas.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* `name-version` of the chart, for the helm.sh/chart label. */}}
{{- define "taas.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that select the operator pods; never change them (Deployment selectors are immutable). */}}
{{- define "taas.selectorLabels" -}}
app.kubernetes.io/name: {{ include "taas.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* Labels on every object of the release. */}}
{{- define "taas.labels" -}}
helm.sh/chart: {{ include "taas.chart" . }}
{{ include "taas.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: taas
{{- end }}

{{/* Name of the operator's ServiceAccount. */}}
{{- define "taas.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "taas.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Operator image reference; the tag defaults to the chart's appVersion. */}}
{{- define "taas.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The TensorBoard image: tensorboard.image, else the trainer image beside the operator's
(`<registry>/taas-operator` -> `<registry>/taas-trainer`, the same tag), so one
`--set image.repository=...` moves both to your registry. */}}
{{- define "taas.tensorboardImage" -}}
{{- if .Values.tensorboard.image }}
{{- .Values.tensorboard.image }}
{{- else }}
{{- $repository := .Values.image.repository }}
{{- $trainer := ternary (printf "%s/taas-trainer" (dir $repository)) "taas-trainer" (contains "/" $repository) }}
{{- printf "%s:%s" $trainer (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* kopf peering name (leader election); empty when one replica runs standalone. */}}
{{- define "taas.peering" -}}
{{- if gt (int .Values.replicaCount) 1 }}{{ include "taas.fullname" . }}{{ end }}
{{- end }}

{{/* The operator pod's tolerations, as `tolerations: [...]`: the `tolerations` value, then a
NoExecute toleration of `operator.nodeLostTolerationSeconds` of each lost-node taint none of them
names (its key, or every key, with effect NoExecute or none: Kubernetes' DefaultTolerationSeconds
test), so a lost node holds the operator that long instead of Kubernetes' 300 s. */}}
{{- define "taas.operatorTolerations" -}}
{{- $given := .Values.tolerations | default list }}
{{- $tolerations := concat (list) $given }}
{{- $seconds := int .Values.operator.nodeLostTolerationSeconds }}
{{- if gt $seconds 0 }}
{{- range $key := list "node.kubernetes.io/not-ready" "node.kubernetes.io/unreachable" }}
{{- $covered := false }}
{{- range $given }}
{{- if and (has (.key | default "") (list "" $key)) (has (.effect | default "") (list "" "NoExecute")) }}
{{- $covered = true }}
{{- end }}
{{- end }}
{{- if not $covered }}
{{- $tolerations = append $tolerations (dict "key" $key "operator" "Exists" "effect" "NoExecute" "tolerationSeconds" $seconds) }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml (dict "tolerations" $tolerations) }}
{{- end }}

{{/* The operator pod's affinity: the `affinity` value; with more than one replica, also a
preferred podAntiAffinity on kubernetes.io/hostname between the replicas (unless `affinity` has
a podAntiAffinity), so one node's loss takes at most one of them when the cluster has room. */}}
{{- define "taas.operatorAffinity" -}}
{{- $affinity := deepCopy (.Values.affinity | default dict) }}
{{- if and (gt (int .Values.replicaCount) 1) (not (hasKey $affinity "podAntiAffinity")) }}
{{- $term := dict "labelSelector" (dict "matchLabels" (include "taas.selectorLabels" . | fromYaml)) "topologyKey" "kubernetes.io/hostname" }}
{{- $_ := set $affinity "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term))) }}
{{- end }}
{{- if $affinity }}
{{- toYaml $affinity }}
{{- end }}
{{- end }}
