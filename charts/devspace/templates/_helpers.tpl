{{/* Names and labels. */}}
{{- define "devspace.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "devspace.fullname" -}}
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

{{- define "devspace.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: devspace
{{- end }}

{{- define "devspace.selectorLabels" -}}
app.kubernetes.io/name: {{ include "devspace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end }}

{{- define "devspace.cloudflaredName" -}}
{{- printf "%s-cloudflared" (include "devspace.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "devspace.cloudflaredSelectorLabels" -}}
app.kubernetes.io/name: {{ include "devspace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: cloudflared
{{- end }}

{{- define "devspace.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "devspace.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "devspace.ownerSecretName" -}}
{{- default (printf "%s-owner" (include "devspace.fullname" .)) .Values.owner.existingSecret }}
{{- end }}

{{- define "devspace.tunnelSecretName" -}}
{{- default (printf "%s-tunnel" (include "devspace.fullname" .)) .Values.cloudflared.existingSecret }}
{{- end }}

{{- define "devspace.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* DEVSPACE_PROJECTS: label=/projects/label,… */}}
{{- define "devspace.projects" -}}
{{- $list := list }}
{{- range .Values.projects }}
{{- $list = append $list (printf "%s=/projects/%s" .label .label) }}
{{- end }}
{{- join "," $list }}
{{- end }}

{{/* The restricted container security context (Pod Security "restricted"),
for cloudflared. */}}
{{- define "devspace.restrictedSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* DevSpace's containers: the same, with what the command sandbox may ask
for (securityContext.unixGate, securityContext.seccompLocalhostProfile). */}}
{{- define "devspace.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
  {{- if .Values.securityContext.unixGate }}
  add: [SYS_PTRACE]
  {{- end }}
seccompProfile:
  {{- with .Values.securityContext.seccompLocalhostProfile }}
  type: Localhost
  localhostProfile: {{ . | quote }}
  {{- else }}
  type: RuntimeDefault
  {{- end }}
{{- end }}
