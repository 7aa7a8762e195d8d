{{/*
toolguard.validate fails the render on values that would deploy a broken or
unsafe toolguard. deployment.yaml includes it, so helm template, install and
upgrade all refuse them.
*/}}
{{- define "toolguard.validate" -}}
{{- $backend := .Values.journal.backend }}
{{- if not (has $backend (list "bolt" "postgres")) }}
{{- fail (printf "journal.backend %q: want bolt or postgres" (toString $backend)) }}
{{- end }}
{{- $replicas := int .Values.replicaCount }}
{{- if lt $replicas 0 }}
{{- fail (printf "replicaCount %d: want 0 or more" $replicas) }}
{{- end }}
{{- if and (eq $backend "bolt") (gt $replicas 1) }}
{{- fail (printf "replicaCount %d needs journal.backend postgres: a bbolt journal has one writer, so journal.backend bolt runs one replica (set journal.backend=postgres and create its Secrets, or replicaCount=1)" $replicas) }}
{{- end }}
{{- if .Values.maintenance.enabled }}
{{- if ne $backend "bolt" }}
{{- fail "maintenance.enabled: the maintenance pod works on the bbolt journal's claim; with journal.backend postgres there is none" }}
{{- end }}
{{- if ne $replicas 0 }}
{{- fail (printf "maintenance.enabled needs replicaCount 0 (got %d): the journal has one writer, so stop toolguard before a shell opens it" $replicas) }}
{{- end }}
{{- end }}
{{- $cfg := .Values.config }}
{{- range $key := list "dsn" "secret_file" "path" "backend" }}
{{- if hasKey (default dict $cfg.journal) $key }}
{{- fail (printf "config.journal.%s: set by the chart (journal.backend, secrets.journalDSN, secrets.journalSecret); remove it from config" $key) }}
{{- end }}
{{- end }}
{{- range $key := list "token" "agent_token" "token_file" "agent_token_file" }}
{{- if hasKey (default dict $cfg.admin) $key }}
{{- fail (printf "config.admin.%s: the tokens come from the Secret secrets.adminTokens; remove it from config" $key) }}
{{- end }}
{{- end }}
{{- if hasKey (default dict $cfg.ca) "dir" }}
{{- fail "config.ca.dir: set by the chart; remove it from config" }}
{{- end }}
{{- if hasKey (default dict $cfg.rules) "dir" }}
{{- fail "config.rules.dir: set by the chart (rules.packs, rules.files); remove it from config" }}
{{- end }}
{{- if not (regexMatch "^(127\\.[0-9]+\\.[0-9]+\\.[0-9]+|localhost|\\[::1\\]):[0-9]+$" (toString $cfg.listen)) }}
{{- fail (printf "config.listen %q: want a loopback address with a port (127.0.0.1:8480): the proxy has no authentication, so only the agent in the pod may reach it" (toString $cfg.listen)) }}
{{- end }}
{{- if not (regexMatch ":[0-9]+$" (toString (default dict $cfg.admin).listen)) }}
{{- fail "config.admin.listen: want an address with a port (0.0.0.0:8481): the probes and the NetworkPolicy use it" }}
{{- end }}
{{- if not (or .Values.rules.packs .Values.rules.files) }}
{{- fail "rules.packs and rules.files are both empty: give toolguard at least one rule file" }}
{{- end }}
{{- range $pack := .Values.rules.packs }}
{{- if not ($.Files.Get (printf "packs/%s.yaml" $pack)) }}
{{- $have := list }}
{{- range $path, $_ := $.Files.Glob "packs/*.yaml" }}
{{- $have = append $have (trimSuffix ".yaml" (base $path)) }}
{{- end }}
{{- fail (printf "rules.packs: no pack %q (have %s)" $pack (join ", " $have)) }}
{{- end }}
{{- if hasKey $.Values.rules.files (printf "%s.yaml" $pack) }}
{{- fail (printf "rules.files.%s.yaml: the pack %s has that file name already" $pack $pack) }}
{{- end }}
{{- end }}
{{- range $name, $_ := .Values.rules.files }}
{{- if not (regexMatch "^[-._a-zA-Z0-9]+\\.ya?ml$" $name) }}
{{- fail (printf "rules.files: %q: toolguard loads only *.yaml and *.yml files, and a ConfigMap key has no slashes" $name) }}
{{- end }}
{{- end }}
{{- end }}
