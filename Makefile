# DevSpace — developer entry points. `make` alone lists them.
GO        ?= go
BIN       := bin/devspace
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/devspace-dev/devspace/internal/buildinfo.version=$(VERSION)
DATA      ?= $(CURDIR)/.data
export CGO_ENABLED ?= 0

.DEFAULT_GOAL := help
.PHONY: help build run test test-deps lint bench microbench load crash fuzz FORCE inspector-check e2e e2e-image image image-local compose-plugin helm-lint clean

help: ## list targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build the static binaries into bin/ (devspace and its command helper devspace-exec)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/devspace ./cmd/devspace-exec

run: build ## run DevSpace locally (state in .data/, a sample Project, loopback listeners)
	@mkdir -p $(DATA)/sample-project
	@test -f $(DATA)/sample-project/README.md || printf '# Sample Project\n\nDevSpace created this folder so you can try it. Point DEVSPACE_PROJECTS at your own code.\n' > $(DATA)/sample-project/README.md
	@state=$${DEVSPACE_STATE_DIR:-$(DATA)/state}; test -f "$$state/auth.json" || DEVSPACE_STATE_DIR="$$state" ./$(BIN) init
	@echo "Owner commands for this instance (another shell): DEVSPACE_STATE_DIR=$${DEVSPACE_STATE_DIR:-$(DATA)/state} ./$(BIN) grants list"
	DEVSPACE_STATE_DIR=$${DEVSPACE_STATE_DIR:-$(DATA)/state} \
	DEVSPACE_PROJECTS=$${DEVSPACE_PROJECTS:-sample=$(DATA)/sample-project} \
	./$(BIN) serve

test: test-deps lint ## run every test: unit, integration, browser (race detector), then helm-lint and e2e
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 20m ./...
	$(MAKE) --no-print-directory helm-lint
	$(MAKE) --no-print-directory e2e

test-deps: ## install what the tests need (headless Chromium) when missing, and fetch the modules quietly
	@scripts/test-deps
	@$(GO) mod download && cd e2e && $(GO) mod download && echo "go modules: in the cache"

# Linters from the Go module proxy, pinned, installed once per version and
# Go toolchain into .cache/tools (a new Go gets freshly built ones: a
# staticcheck built by an older Go cannot load newer code). staticcheck
# finds what vet does not (unused code, deprecated APIs, simplifications);
# deadcode lists functions that neither binary can reach.
STATICCHECK_VERSION := v0.8.2
DEADCODE_VERSION    := v0.52.0
TOOLS_DIR   := $(CURDIR)/.cache/tools/$(shell $(GO) env GOVERSION)
STATICCHECK := $(TOOLS_DIR)/staticcheck-$(STATICCHECK_VERSION)/staticcheck
DEADCODE    := $(TOOLS_DIR)/deadcode-$(DEADCODE_VERSION)/deadcode

$(STATICCHECK):
	GOBIN=$(dir $@) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(DEADCODE):
	GOBIN=$(dir $@) $(GO) install golang.org/x/tools/cmd/deadcode@$(DEADCODE_VERSION)

# vet compiles every package; with -trimpath and CGO_ENABLED=0 that is the
# same compilation `make build`, the e2e image and the tests' server builds
# use, so they find it in the build cache. A function only tests reach is
# dead for deadcode: delete it, or move a test helper into a _test.go file.
lint: $(STATICCHECK) $(DEADCODE) ## go vet, gofmt, staticcheck and deadcode (code neither binary reaches); fails on any finding
	$(GO) vet -trimpath ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(STATICCHECK) ./...
	@out=$$($(DEADCODE) ./cmd/devspace ./cmd/devspace-exec) || exit 1; \
		if [ -n "$$out" ]; then echo "deadcode: unreachable from cmd/devspace and cmd/devspace-exec:"; echo "$$out"; exit 1; fi

# The performance budget and reliability proof (issue 8) live in bench/:
# they drive the real `devspace serve` binary over loopback with a real
# OAuth flow. Results (JSON) go to bench/results/.
BENCH_TEST    := bin/devspace-bench.test
BENCH_FLAGS   ?=
LOAD_DURATION ?= 60s
LOAD_SESSIONS ?= 200
LOAD_GRANTS   ?= 20
# LOAD_HOSTILE=1: one of the LOAD_GRANTS grants is hostile (bench/hostile_test.go);
# the others' load runs LOAD_DURATION without it and LOAD_DURATION with it,
# alternating, and fails past 2× the p99 (BENCH_FLAGS=-hostile-max-ratio=N). Root only: it mounts a tmpfs.
LOAD_HOSTILE  ?=
CRASH_KILLS   ?= 300
CRASH_ALLOW   ?=
FUZZTIME      ?= 10s
# Every fuzz target (package:Target); `make fuzz` runs each for FUZZTIME, a
# duration (10s) or an execution count (10000x, what CI uses: see scripts/fuzz).
FUZZ_TARGETS  := internal/patch:FuzzParse internal/project:FuzzCleanRel internal/project:FuzzOpen internal/idempotency:FuzzValidateID \
	internal/cursor:FuzzDecode internal/strictjson:FuzzCheck \
	internal/search:FuzzIgnoreLine internal/oauth:FuzzRegister internal/oauth:FuzzToken internal/oauth:FuzzAuthorize

$(BENCH_TEST): FORCE
	$(GO) test -c -trimpath -o $@ ./bench

bench: $(BENCH_TEST) ## performance budget: ours vs baselines side by side, table + JSON in bench/results (as root it installs rg if missing)
	@scripts/test-deps bench
	cd bench && ../$(BENCH_TEST) -test.run '^TestSuite$$' -test.timeout 60m -suite $(BENCH_FLAGS)

microbench: ## every package's Go benchmarks (go test -bench)
	$(GO) test -run '^$$' -bench . -benchmem ./...

load: $(BENCH_TEST) ## load: LOAD_SESSIONS sessions over LOAD_GRANTS grants, mixed tools for LOAD_DURATION, then leak checks; LOAD_HOSTILE=1 adds a hostile grant and compares the p99s
	cd bench && ../$(BENCH_TEST) -test.run '^TestLoad$$' -test.timeout 30m -load -duration $(LOAD_DURATION) \
		-sessions $(LOAD_SESSIONS) -grants $(LOAD_GRANTS) $(if $(LOAD_HOSTILE),-hostile) $(BENCH_FLAGS)

crash: $(BENCH_TEST) ## crash consistency: SIGKILL the server at CRASH_KILLS random points, restart, check files/records/DB/processes
	cd bench && ../$(BENCH_TEST) -test.run '^TestCrash$$' -test.timeout 30m -crash $(CRASH_KILLS) \
		$(if $(CRASH_ALLOW),-crash-allow $(CRASH_ALLOW)) $(BENCH_FLAGS)

fuzz: ## run every fuzz target for FUZZTIME each, a duration or a count like 10000x (a failing input lands in testdata/fuzz)
	GO=$(GO) scripts/fuzz $(FUZZTIME) $(FUZZ_TARGETS)

FORCE:

INSPECTOR_DIR ?= $(CURDIR)/.cache/inspector
inspector-check: ## drive a real instance with the MCP Inspector CLI (npm; 0.16.8 is the last that runs on Node 20)
	@test -f $(INSPECTOR_DIR)/node_modules/@modelcontextprotocol/inspector-cli/build/index.js || \
		(mkdir -p $(INSPECTOR_DIR) && cd $(INSPECTOR_DIR) && npm install --no-audit --no-fund @modelcontextprotocol/inspector@0.16.8 >/dev/null)
	DEVSPACE_INSPECTOR=$(INSPECTOR_DIR)/node_modules/@modelcontextprotocol/inspector-cli/build/index.js \
		$(GO) test -count=1 -tags inspector -run TestInspectorCLI -v ./internal/mcpserver

# The e2e tests and the chart checks live in their own Go module (e2e/), so
# testcontainers, docker compose and Helm stay out of the server's go.mod.
E2E_DIR   := $(CURDIR)/.cache/e2e
E2E_IMAGE ?= devspace:e2e
IMAGE     ?= devspace:$(VERSION)

# testcontainers-go must use the daemon on this machine (in a container it
# would target the default gateway) and must not start its reaper, whose
# image cannot be pulled here. e2e/ refuses to run without these.
e2e: export TESTCONTAINERS_HOST_OVERRIDE := 127.0.0.1
e2e: export TESTCONTAINERS_RYUK_DISABLED := true
e2e: e2e-image ## end-to-end tests: the image, hardened as in compose.yaml, driven over OAuth + MCP (Docker)
	cd e2e && $(GO) vet -tags e2e ./...
	cd e2e && DEVSPACE_E2E_IMAGE=$(E2E_IMAGE) DEVSPACE_E2E_COMPOSE=$(E2E_DIR)/docker-compose DEVSPACE_E2E_ROOT=$(CURDIR) \
		DEVSPACE_E2E_BASE=$$(../deploy/image/base-image) \
		$(GO) test -tags e2e -count=1 -timeout 20m -v .

# QUIET_BUILD runs a command and drops the docker CLI's notice that the
# legacy builder is deprecated (this machine's docker has no buildx); any
# failure is printed in full.
QUIET_BUILD := scripts/quiet-build

# The image under test: a static binary built here on a Debian base made
# with debootstrap (no registry is needed), plus docker compose built from
# the Go module proxy.
e2e-image:
	@deploy/e2e/ensure-docker "make e2e"
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/devspace ./cmd/devspace-exec
	@base=$$(deploy/image/base-image) && echo "base image: $$base" && \
		$(QUIET_BUILD) docker build -q --target runtime-prebuilt --build-arg RUNTIME_IMAGE=$$base --build-arg VERSION=$(VERSION) \
			-t $(E2E_IMAGE) .
	@docker image inspect $(E2E_IMAGE) --format 'image $(E2E_IMAGE): {{.Size}} bytes'
	cd e2e && $(GO) build -o $(E2E_DIR)/docker-compose github.com/docker/compose/v5/cmd

# The image compose.yaml runs by default (devspace:local), built with no
# registry: the static binaries on the locally debootstrapped Debian base that
# e2e uses, for the UID/GID in .env (ENV_FILE) when there is one.
LOCAL_IMAGE ?= devspace:local
ENV_FILE    ?= .env
ENV_UID     := $(shell sed -n 's/^DEVSPACE_UID=//p' $(ENV_FILE) 2>/dev/null | tail -n1)
ENV_GID     := $(shell sed -n 's/^DEVSPACE_GID=//p' $(ENV_FILE) 2>/dev/null | tail -n1)
# Extra Debian packages for the commands (the Dockerfile's build argument),
# from the make command line or the environment, else from .env.
DEVSPACE_EXTRA_PACKAGES ?= $(shell sed -n 's/^DEVSPACE_EXTRA_PACKAGES=//p' $(ENV_FILE) 2>/dev/null | tail -n1 | tr -d "\"'")
image-local: ## build devspace:local for compose with no registry (needs root: debootstrap makes the Debian base once; DEVSPACE_UID/GID and DEVSPACE_EXTRA_PACKAGES from .env)
	@deploy/e2e/ensure-docker "make image-local"
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/devspace ./cmd/devspace-exec
	@base=$$(deploy/image/base-image) && echo "base image: $$base" && \
		$(QUIET_BUILD) docker build -q --target runtime-prebuilt --build-arg RUNTIME_IMAGE=$$base --build-arg VERSION=$(VERSION) \
			$(if $(ENV_UID),--build-arg DEVSPACE_UID=$(ENV_UID)) $(if $(ENV_GID),--build-arg DEVSPACE_GID=$(ENV_GID)) \
			--build-arg DEVSPACE_EXTRA_PACKAGES="$(DEVSPACE_EXTRA_PACKAGES)" \
			-t $(LOCAL_IMAGE) .
	@echo "built $(LOCAL_IMAGE): docker compose run --rm devspace init, then docker compose up -d devspace"

# Debian 12 ships only Compose v1 (docker-compose 1.29), which cannot read
# compose.yaml; this builds v2 from the Go module proxy as a CLI plugin.
COMPOSE_PLUGIN ?= $(or $(DOCKER_CONFIG),$(HOME)/.docker)/cli-plugins/docker-compose
compose-plugin: ## install Docker Compose v2 as the `docker compose` plugin, built from the Go module proxy (no registry)
	@mkdir -p $(dir $(COMPOSE_PLUGIN))
	cd e2e && $(GO) build -o $(COMPOSE_PLUGIN) github.com/docker/compose/v5/cmd
	@docker compose version

image: ## build the container image (multi-stage; BUILDER_IMAGE and RUNTIME_IMAGE pick other bases; DEVSPACE_EXTRA_PACKAGES adds Debian packages)
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$$(git rev-parse HEAD 2>/dev/null || echo unknown) \
		$(if $(BUILDER_IMAGE),--build-arg BUILDER_IMAGE=$(BUILDER_IMAGE)) $(if $(RUNTIME_IMAGE),--build-arg RUNTIME_IMAGE=$(RUNTIME_IMAGE)) \
		--build-arg DEVSPACE_EXTRA_PACKAGES="$(DEVSPACE_EXTRA_PACKAGES)" \
		-t $(IMAGE) .

helm-lint: ## Helm's linter (as `helm lint --strict`) and renderer on the chart with each ci/ values file, every manifest decoded into the Kubernetes API types (offline)
	cd e2e && $(GO) vet ./chart && $(GO) test -count=1 ./chart

clean: ## remove build output (keeps .data/)
	rm -rf bin
