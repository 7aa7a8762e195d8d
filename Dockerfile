# syntax=docker/dockerfile:1
#
# toolguard container image: a static, non-root binary on distroless.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t toolguard .
#
# The image runs `toolguard serve --config /etc/toolguard/config.yaml`. It
# ships a minimal config (deploy/docker/config.yaml: loopback addresses, the
# sidecar case); mount your own over it. Rule files are NOT in the image:
# mount them at /etc/toolguard/rules, or serve refuses to start.
#
# Precedence is flags > environment > config file > defaults, so the ENV
# defaults below win over journal.path, ca.dir, rules.dir and log.format in
# a mounted config file. Change those four with environment variables (as
# deploy/kubernetes/ does), not in the file.
#
# deploy/manifests_test.go checks this file (go test ./deploy/).

# golang images set GOTOOLCHAIN=local, and go.mod names the least Go patch
# release that builds toolguard: build with --pull, or pin the patch release
# (--build-arg GO_VERSION=1.26.8).
ARG GO_VERSION=1.26

# ---- build ------------------------------------------------------------------
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src

# Modules first: this layer is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download && go mod verify

COPY . .
ARG TARGETOS TARGETARCH
ARG VERSION=dev
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/toolguard ./cmd/toolguard

# Directories the non-root user writes to, owned by it, so that a fresh
# Docker volume mounted there is writable (Docker copies the ownership of the
# image directory into a new volume). The CA directory is world-readable, as
# toolguard creates it, so that other containers can read ca.pem (ca-key.pem
# itself is 0600). Kubernetes ignores all this: use fsGroup.
RUN mkdir -p /out/state /out/ca && chown 65532:65532 /out/state /out/ca \
    && chmod 0700 /out/state && chmod 0755 /out/ca

# ---- run --------------------------------------------------------------------
# static-debian12: no libc (CGO_ENABLED=0), CA roots in
# /etc/ssl/certs/ca-certificates.crt for upstream TLS, tzdata, /etc/passwd
# with nonroot = 65532. No shell: kubectl exec runs toolguard itself.
FROM gcr.io/distroless/static-debian12:nonroot

ARG VERSION=dev
LABEL org.opencontainers.image.title="toolguard" \
      org.opencontainers.image.description="Sidecar forward proxy that keeps AI agents from repeating side effects" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/toolguard/toolguard"

COPY --from=build /out/toolguard /usr/local/bin/toolguard
COPY --from=build --chown=65532:65532 /out/state /var/lib/toolguard
COPY --from=build --chown=65532:65532 /out/ca /var/run/toolguard/ca
COPY deploy/docker/config.yaml /etc/toolguard/config.yaml

ENV TOOLGUARD_JOURNAL_PATH=/var/lib/toolguard/toolguard.db \
    TOOLGUARD_CA_DIR=/var/run/toolguard/ca \
    TOOLGUARD_RULES_DIR=/etc/toolguard/rules \
    TOOLGUARD_LOG_FORMAT=json

# The journal (toolguard.db and its HMAC secret toolguard.db.secret) and the
# CA (ca.pem, ca-key.pem) must outlive the container: losing the journal
# forgets every recorded intent, losing the secret changes every key, losing
# the CA makes agents re-trust a new one.
VOLUME ["/var/lib/toolguard", "/var/run/toolguard/ca"]

# 8480 proxy, 8481 admin API (/healthz, /readyz, /metrics, /v1/...).
EXPOSE 8480 8481

USER 65532:65532
ENTRYPOINT ["toolguard"]
CMD ["serve", "--config", "/etc/toolguard/config.yaml"]
