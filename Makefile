# DevSpace — developer entry points. `make` alone lists them.
GO        ?= go
BIN       := bin/devspace
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/devspace-dev/devspace/internal/buildinfo.version=$(VERSION)
DATA      ?= $(CURDIR)/.data
export CGO_ENABLED ?= 0

.DEFAULT_GOAL := help
.PHONY: help build run test test-deps lint bench inspector-check e2e image helm-lint clean

help: ## list targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build the static binary into bin/
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/devspace

run: build ## run DevSpace locally (state in .data/, a sample Project, loopback listeners)
	@mkdir -p $(DATA)/sample-project
	@test -f $(DATA)/sample-project/README.md || printf '# Sample Project\n\nDevSpace created this folder so you can try it. Point DEVSPACE_PROJECTS at your own code.\n' > $(DATA)/sample-project/README.md
	@test -f $(DATA)/state/auth.json || DEVSPACE_STATE_DIR=$(DATA)/state ./$(BIN) init
	DEVSPACE_STATE_DIR=$${DEVSPACE_STATE_DIR:-$(DATA)/state} \
	DEVSPACE_PROJECTS=$${DEVSPACE_PROJECTS:-sample=$(DATA)/sample-project} \
	./$(BIN) serve

test: test-deps lint ## run every test (unit, integration, browser) with the race detector
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 20m ./...

test-deps: ## install what the tests need (headless Chromium) when missing
	@scripts/test-deps

lint: ## go vet and gofmt
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

bench: ## run the benchmarks
	$(GO) test -run '^$$' -bench . -benchmem ./...

INSPECTOR_DIR ?= $(CURDIR)/.cache/inspector
inspector-check: ## drive a real instance with the MCP Inspector CLI (npm; 0.16.8 is the last that runs on Node 20)
	@test -f $(INSPECTOR_DIR)/node_modules/@modelcontextprotocol/inspector-cli/build/index.js || \
		(mkdir -p $(INSPECTOR_DIR) && cd $(INSPECTOR_DIR) && npm install --no-audit --no-fund @modelcontextprotocol/inspector@0.16.8 >/dev/null)
	DEVSPACE_INSPECTOR=$(INSPECTOR_DIR)/node_modules/@modelcontextprotocol/inspector-cli/build/index.js \
		$(GO) test -count=1 -tags inspector -run TestInspectorCLI -v ./internal/mcpserver

e2e: ## end-to-end tests against the container image (Docker)
	@echo "e2e arrives with the appliance issue (Dockerfile, compose, Helm)"; exit 1

image: ## build the container image
	@echo "the Dockerfile arrives with the appliance issue"; exit 1

helm-lint: ## lint the Helm chart
	@echo "the Helm chart arrives with the appliance issue"; exit 1

clean: ## remove build output (keeps .data/)
	rm -rf bin
