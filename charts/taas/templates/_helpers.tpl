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
