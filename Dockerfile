# DevSpace container image (docs/design.md §11).
#
#   docker build -t devspace .                     # the normal multi-stage build
#   docker build --target runtime-prebuilt \
#     --build-arg RUNTIME_IMAGE=devspace-base:… -t devspace:e2e .
#                                                  # a static binary built on the host
#                                                  # (bin/devspace) on a locally made base
#
# Works with the legacy builder and with BuildKit (no `RUN --mount`, no
# `COPY --chmod`, no syntax directive). The legacy builder runs every stage
# up to its target, so the stages are ordered for it: runtime-prebuilt comes
# before the builder stage (it never needs the builder image) and passes
# without a prebuilt binary (a normal build walks through it too).

ARG BUILDER_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# ---------------------------------------------------------------------------
# base: the runtime without the binary. Commands the model runs execute in
# here, so it carries the tools a coding agent expects.
FROM ${RUNTIME_IMAGE} AS base
ARG DEVSPACE_UID=10001
ARG DEVSPACE_GID=10001
# The package list stays in the image, next to the binary.
COPY deploy/image/packages.txt /usr/local/lib/devspace/packages.txt
# apt runs only for packages the base lacks: a base made by
# deploy/image/base-image already has them all and needs no network.
RUN set -eu; \
    missing=""; \
    for p in $(grep -v -e '^#' -e '^[[:space:]]*$' /usr/local/lib/devspace/packages.txt); do \
      dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; \
    done; \
    if [ -n "$missing" ]; then \
      apt-get update; \
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing; \
      rm -rf /var/lib/apt/lists/*; \
    fi; \
    ln -s ../lib/devspace/devspace /usr/local/bin/devspace; \
    # Any UID/GID works (macOS' GID 20, GID 0…): an existing group or user
    # with that ID is reused, never recreated. UID 0 is refused: DevSpace
    # runs as a low-privilege user.
    if [ "$DEVSPACE_UID" = 0 ]; then echo "DEVSPACE_UID must not be 0" >&2; exit 1; fi; \
    getent group "$DEVSPACE_GID" >/dev/null || groupadd --gid "$DEVSPACE_GID" devspace; \
    if user=$(getent passwd "$DEVSPACE_UID" | cut -d: -f1) && [ -n "$user" ]; then \
      usermod --gid "$DEVSPACE_GID" --home /home/devspace --shell /bin/bash "$user"; \
      mkdir -p /home/devspace; chown "$DEVSPACE_UID:$DEVSPACE_GID" /home/devspace; \
    else \
      useradd --uid "$DEVSPACE_UID" --gid "$DEVSPACE_GID" --home-dir /home/devspace --create-home \
        --shell /bin/bash devspace; \
    fi; \
    chmod 0700 /home/devspace; \
    mkdir -p /data /scratch /tools /projects; \
    chown "$DEVSPACE_UID:$DEVSPACE_GID" /data /scratch /tools; \
    chmod 0700 /data /scratch /tools

# Extra Debian packages for the commands (issue 34): the Owner's toolchains,
# e.g. DEVSPACE_EXTRA_PACKAGES="nodejs npm golang-go cargo" in .env. A name
# apt does not know fails the build here, with apt's message. Its own layer,
# so that changing the list keeps the one above.
ARG DEVSPACE_EXTRA_PACKAGES=
RUN set -euf; \
    extra=$(echo "$DEVSPACE_EXTRA_PACKAGES" | tr ',' ' '); \
    for p in $extra; do \
      case "$p" in \
        [a-z0-9]*) ;; \
        *) echo "DEVSPACE_EXTRA_PACKAGES: \"$p\" is not a Debian package name" >&2; exit 1 ;; \
      esac; \
      case "$p" in *[!a-z0-9+.:=~-]*) echo "DEVSPACE_EXTRA_PACKAGES: \"$p\" is not a Debian package name" >&2; exit 1 ;; esac; \
    done; \
    if [ -n "$(echo $extra)" ]; then \
      apt-get update; \
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $extra; \
      rm -rf /var/lib/apt/lists/*; \
    fi; \
    echo "$extra" > /usr/local/lib/devspace/extra-packages.txt

ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="DevSpace" \
      org.opencontainers.image.description="Self-hosted MCP server and OAuth 2.1 authorization server that lets ChatGPT work on your approved Projects" \
      org.opencontainers.image.source="https://github.com/devspace-dev/devspace" \
      org.opencontainers.image.url="https://github.com/devspace-dev/devspace" \
      org.opencontainers.image.documentation="https://github.com/devspace-dev/devspace#deployment" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.vendor="DevSpace"

# The image listens on all interfaces for the public (7676) and metrics
# (7678) listeners; the control listener stays on the container's loopback
# (127.0.0.1:7677), reachable only through `docker exec`.
# The commands' scratch directories (their TMPDIR) live on a volume of their
# own, off the state's: a command filling its scratch cannot fill the disk
# SQLite writes to without meeting the disk guard first. Each Project's tool
# home (its commands' HOME, installed tools and caches) lives on another,
# kept across restarts and upgrades.
ENV DEVSPACE_STATE_DIR=/data \
    DEVSPACE_SCRATCH_DIR=/scratch \
    DEVSPACE_TOOLS_DIR=/tools \
    DEVSPACE_LISTEN=0.0.0.0:7676 \
    DEVSPACE_METRICS_LISTEN=0.0.0.0:7678 \
    DEVSPACE_ADMIN_LISTEN=0.0.0.0:7679 \
    DEVSPACE_LOG_FORMAT=json \
    HOME=/home/devspace \
    LANG=C.UTF-8
VOLUME ["/data", "/scratch", "/tools"]
EXPOSE 7676 7678 7679
WORKDIR /projects
USER ${DEVSPACE_UID}:${DEVSPACE_GID}
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["devspace", "healthcheck"]
# tini is PID 1: it reaps what a dying command supervisor leaves behind and
# forwards SIGTERM to the server, which stops every command tree.
ENTRYPOINT ["tini", "--", "devspace"]
CMD ["serve"]

# ---------------------------------------------------------------------------
# runtime-prebuilt: the static binaries bin/devspace and bin/devspace-exec
# (its command helper) built outside (make build), for tests and machines
# that cannot pull the builder image. bin/devspac[e] is a pattern, which may
# match nothing (with packages.txt always matching), so a normal build
# passes through here.
FROM base AS runtime-prebuilt
COPY deploy/image/packages.txt bin/devspac[e] bin/devspace-exe[c] /usr/local/lib/devspace/

# ---------------------------------------------------------------------------
# build: the static binaries (devspace and its command helper, which must
# lie beside it: internal/process FindHelper).
FROM ${BUILDER_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY internal ./internal
ARG VERSION=dev
ARG REVISION=
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/devspace-dev/devspace/internal/buildinfo.version=${VERSION} -X github.com/devspace-dev/devspace/internal/buildinfo.commit=${REVISION}" \
      -o /out/ ./cmd/devspace ./cmd/devspace-exec

# ---------------------------------------------------------------------------
# runtime (default target).
FROM base AS runtime
COPY --from=build /out/devspace /out/devspace-exec /usr/local/lib/devspace/
