{{/*
Names and labels.
*/}}
{{- define "toolguard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The release's base name: the release name when it already says toolguard,
else <release>-toolguard; fullnameOverride replaces it.
*/}}
{{- define "toolguard.fullname" -}}
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

{{- define "toolguard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "toolguard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The agent pods' selector. The component keeps the migrate Job's and the
maintenance pod's pods out of the Deployment's, the PodDisruptionBudget's
and the NetworkPolicies' selectors.
*/}}
{{- define "toolguard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "toolguard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end }}

{{/*
An image reference from a map with repository, tag and digest; a digest wins
over the tag. Called with (list IMAGE DEFAULT_TAG).
*/}}
{{- define "toolguard.imageRef" -}}
{{- $img := index . 0 }}
{{- if $img.digest }}
{{- printf "%s@%s" $img.repository $img.digest }}
{{- else }}
{{- printf "%s:%s" $img.repository (toString (default (index . 1) $img.tag)) }}
{{- end }}
{{- end }}

{{- define "toolguard.image" -}}
{{- include "toolguard.imageRef" (list .Values.image .Chart.AppVersion) }}
{{- end }}

{{/*
The securityContext of every container the chart runs itself: the image's
non-root user, nothing writable but its volumes, no privileges.
*/}}
{{- define "toolguard.securityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "toolguard.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
# The journal volume and the Secrets' files become group 65532, so every
# container of the pod (the agent, as a supplementary group) can read what
# it mounts.
fsGroup: 65532
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
The admin API's port, from config.admin.listen.
*/}}
{{- define "toolguard.adminPort" -}}
{{- regexReplaceAll "^.*:" (toString .Values.config.admin.listen) "" }}
{{- end }}

{{/*
Where toolguard's files are in its container.
*/}}
{{- define "toolguard.caDir" -}}
{{- if eq .Values.journal.backend "postgres" }}/var/run/toolguard/ca{{ else }}/var/lib/toolguard/ca{{ end }}
{{- end }}
