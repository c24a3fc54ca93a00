# convoy's build. `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

BIN := $(CURDIR)/bin
CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
# golangci-lint v2.15.0 is the newest release that builds with Go 1.26.
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
# crd-ref-docs writes docs/reference/api.md from the Go types in api/ (hack/crd-ref-docs).
CRD_REF_DOCS_VERSION := v0.3.0
CRD_REF_DOCS := $(BIN)/crd-ref-docs-$(CRD_REF_DOCS_VERSION)
TOOLS_SRC := $(shell find test/tools -name '*.go' -not -path 'test/tools/monitoring/*') test/tools/go.mod test/tools/go.sum
# Prometheus and Alertmanager are upstream's commands, pinned by a module each (their versions
# need different versions of each other's libraries).
PROMETHEUS_MOD := test/tools/monitoring/prometheus
ALERTMANAGER_MOD := test/tools/monitoring/alertmanager
# Gitea, the tests' Git forge (test/infrastructure/forge), pinned by a module that copies Gitea's
# replace lines.
GITEA_MOD := test/tools/forge/gitea
# Flux's source-controller and kustomize-controller, the old owner of the takeover test
# (test/takeover), pinned by a module each that copies the controller's replace lines.
SOURCE_CONTROLLER_MOD := test/tools/flux/source-controller
KUSTOMIZE_CONTROLLER_MOD := test/tools/flux/kustomize-controller
# $(call PROMETHEUS_VERSION_FLAG,<module>) stamps the module's pinned version (go list, in the
# recipe's folder) into a Prometheus project's command: its --version and build_info say it.
PROMETHEUS_VERSION_FLAG = -X github.com/prometheus/common/version.Version=$$(go list -m -f '{{.Version}}' $(1))

GO_TEST_ARGS ?=
GO_TEST_TIMEOUT ?= 40m
# The race detector runs on the packages whose own code shares memory between goroutines
# (render cache, Git store, ledger, client caches, controllers, servers); the pure planners,
# the commands and the test harness run without its slowdown.
RACE_PACKAGES := ./test/infrastructure/controlplane/... ./test/infrastructure/gitserver/... \
	./test/infrastructure/monitoring/... ./manifests/... ./sources/... ./sync/... ./rollout/rolloutcontroller/... \
	./rollout/checks/... ./rollout/commitstatus/...
# The end-to-end tests that take the longest run in `make e2e` (and in CI), not in `make test`;
# each area keeps a shorter test in `make test` (TestFaultsQuick, TestRunTiny,
# TestChartRenderParityOfMetricsServer, TestStoreStaysBoundedOver300Commits, the other rollout
# tests on the fleet). So does the test that only proves the packaging
# (TestImageRunsItsConvoyBinary). Top-level test names, each defined in a package of E2E_PACKAGES (a test of
# test/deploy checks it).
E2E_TESTS := TestSignalGatesEndToEnd TestRolloutAcrossTheFleet TestRolloutGatesEndToEnd TestDependenciesAcrossTheFleet \
	TestHelmChartRollsOutAcrossPartitions TestFleetSafetyOnABadDay TestControllerStartsWhenTheHostedClusterCRDAppears \
	TestClusterScopedPKOPackageRollsOutIntoHostedClusters TestRolloutLogTellsTheStory \
	TestDashboardInBrowserFollowsARolloutAndAFailure TestControllerPostsRolloutEventsInFluxFormat \
	TestShardReplicasEachReconcileTheirOwnPackages TestRunTinyOtherScenarios TestFaultsShort \
	TestStoreStaysBoundedOver1000Commits TestChartRenderParity \
	TestFromPullRequestToFleet TestBlackholedForgeDoesNotSlowTheRollout TestFixedTokenSecretIsUsedAtOnce \
	TestDevSectorsMovesACommitSectorBySector TestImageRunsItsConvoyBinary TestTakeoverFromARunningFlux
EMPTY :=
E2E_REGEX := ^($(subst $(EMPTY) $(EMPTY),|,$(strip $(E2E_TESTS))))$$
# E2E_PACKAGES hold the E2E_TESTS; those also in RACE_PACKAGES run under -race.
E2E_PACKAGES := ./rollout/rolloutcontroller ./sources ./manifests ./cmd/convoy ./cmd/convoy-dev ./test/bench ./test/forgeloop ./hack/image \
	./test/takeover
BENCH_ARGS ?=
FAULTS_ARGS ?=
SOAK_ARGS ?=
DEMO_ARGS ?=

export CONVOY_TEST_BINARIES := $(BIN)
# The module's builds and its tests build with cgo off: one set of compiled packages serves
# bin/convoy, the tests, the binaries tests build (the image's, an older convoy's) and the
# demo, and the binaries are static, as the image ships them. With cgo on, every package above
# net would compile a second time for the image's test. The race detector needs cgo: its tests
# turn it back on, and so does Gitea's build (sqlite).
export CGO_ENABLED := 0

# What `convoy version` and the convoy_build_info metric say: set at link time.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
BUILDINFO := github.com/convoy-gitops/convoy/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).revision=$(REVISION) -X $(BUILDINFO).buildDate=$(BUILD_DATE)
# The platforms of `make image`, and where it and `make release` write.
PLATFORMS ?= linux/amd64 linux/arm64
DIST := $(CURDIR)/dist
# IMAGE=registry/name:tag pushes the image `make image` builds; `make release` pins its repository.
IMAGE ?=

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } \
		/^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code for the API types.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) deploy-manifests ## Generate CRDs into deploy/crds, RBAC into deploy/rbac, and copy HyperShift's CRDs for the test fleet.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=deploy/crds
	go run ./test/infrastructure/simfleet/gencrds

.PHONY: flux-crds
flux-crds: $(CONTROLLER_GEN) ## Generate Flux's notification CRDs into test/deploy/testdata/flux/stock from the pinned notification-controller api module (the deploy/flux test).
	go run ./hack/fluxcrds -controller-gen $(CONTROLLER_GEN)

.PHONY: deploy-manifests
deploy-manifests: $(CONTROLLER_GEN) ## Generate the controller's ClusterRole into deploy/rbac from the RBAC markers.
	$(CONTROLLER_GEN) rbac:roleName=convoy-controller paths=./... output:rbac:artifacts:config=deploy/rbac

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint with .golangci.yml (gofmt, vet, staticcheck, importas, depguard, revive, godot, errorlint...).
	$(GOLANGCI_LINT) run ./...

.PHONY: docs
docs: $(CRD_REF_DOCS) ## Generate the reference in docs/reference: API (from api/), CLI and controller flags (from the commands).
	$(CRD_REF_DOCS) --source-path=./api --config=hack/crd-ref-docs/config.yaml --renderer=markdown \
		--templates-dir=hack/crd-ref-docs/templates --output-path=docs/reference/api.md --log-level=ERROR
	go test ./cmd/convoy ./cmd/convoy-dev -run '^TestReferenceIsGenerated$$' -count=1 -update

.PHONY: verify
verify: generate manifests docs ## Fail when regenerated files (code, CRDs, RBAC, reference docs) differ from the committed ones.
	@git diff --exit-code -- api deploy/crds deploy/rbac test/infrastructure/simfleet/crds || \
		{ echo "generated files are out of date: run make generate manifests and commit"; exit 1; }
	@git diff --exit-code -- docs/reference && \
		test -z "$$(git ls-files --others --exclude-standard -- docs/reference)" || \
		{ echo "docs/reference is out of date: run make docs and commit"; exit 1; }

##@ Build

# The servers the tests and the demo run, built from source into bin/ once and kept there.
# CONTROL_PLANE: the API servers of the demo's management cluster and hosted clusters, and of
# every test on a fleet. MONITORING: the rollout checks' tests query them. FORGE: the tests of
# commit statuses and of the pull-request loop drive it. Each target builds only what it runs:
# `make demo` builds the control plane alone (a test of test/deploy checks it against what the
# demo starts).
CONTROL_PLANE := $(BIN)/kube-apiserver $(BIN)/etcd
MONITORING := $(BIN)/prometheus $(BIN)/alertmanager
FORGE := $(BIN)/gitea
FLUX := $(BIN)/source-controller $(BIN)/kustomize-controller
# Measured cold on a quiet 2-core machine (empty build and module caches, downloads included,
# one build after the other: `make demo`, then `make tools`, on 2026-12-02); for the line each
# build prints before it starts.
CONTROL_PLANE_COLD := about 6 minutes
PROMETHEUS_COLD := about 3 minutes
ALERTMANAGER_COLD := under a minute
GITEA_COLD := about 5 minutes
SOURCE_CONTROLLER_COLD := about 4 minutes
KUSTOMIZE_CONTROLLER_COLD := about 3 minutes

.PHONY: tools
tools: $(CONTROL_PLANE) $(MONITORING) $(FORGE) $(FLUX) ## Build every server the tests run: kube-apiserver, etcd, Prometheus, Alertmanager, Gitea, Flux's source-controller and kustomize-controller (cached afterwards).

# Note: one go build makes both binaries. On 2 cores one go build already keeps both cores
# busy compiling, so two builds side by side would not finish sooner and would compile the
# packages they share (gRPC, protobuf, the etcd client, OpenTelemetry) twice; one build
# compiles those once and links one binary while it compiles the other's last packages. No
# debug information: the binaries are only run, and linking it is a large part of the build.
$(CONTROL_PLANE) &: $(TOOLS_SRC)
	@echo "==> Building bin/kube-apiserver and bin/etcd from source: the API servers of the management cluster and of each hosted cluster ($(CONTROL_PLANE_COLD) cold on 2 cores; cached afterwards)"
	cd test/tools && go build -ldflags=-w -o $(BIN)/ ./kube-apiserver ./etcd

# Note: remove_all_sd leaves out the service discoveries of clouds and Kubernetes (file_sd, which
# the tests use, stays): a third of its packages. Without the builtinassets tag there is no web
# UI (its generated files are not in the module), only the HTTP API the tests use.
$(BIN)/prometheus: $(PROMETHEUS_MOD)/go.mod $(PROMETHEUS_MOD)/go.sum
	@echo "==> Building bin/prometheus from source: the rollout checks' tests query it ($(PROMETHEUS_COLD) cold on 2 cores; cached afterwards)"
	cd $(PROMETHEUS_MOD) && go build -tags remove_all_sd -o $@ \
		-ldflags="-w $(call PROMETHEUS_VERSION_FLAG,github.com/prometheus/prometheus)" github.com/prometheus/prometheus/cmd/prometheus

$(BIN)/alertmanager: $(ALERTMANAGER_MOD)/go.mod $(ALERTMANAGER_MOD)/go.sum
	@echo "==> Building bin/alertmanager from source: the rollout checks' tests read its alerts ($(ALERTMANAGER_COLD) cold on 2 cores; cached afterwards)"
	cd $(ALERTMANAGER_MOD) && go build -o $@ \
		-ldflags="-w $(call PROMETHEUS_VERSION_FLAG,github.com/prometheus/alertmanager)" github.com/prometheus/alertmanager/cmd/alertmanager

# Note: sqlite is Gitea's database in the tests; at run time it reads templates/ and options/
# from the module's directory (test/infrastructure/forge finds it with go list).
$(BIN)/gitea: $(GITEA_MOD)/go.mod $(GITEA_MOD)/go.sum
	@echo "==> Building bin/gitea from source: the tests of commit statuses and of the pull-request loop drive it ($(GITEA_COLD) cold on 2 cores; cached afterwards)"
	cd $(GITEA_MOD) && CGO_ENABLED=1 go build -tags 'sqlite sqlite_unlock_notify' -o $@ \
		-ldflags="-w -X main.Version=$$(go list -m -f '{{.Version}}' code.gitea.io/gitea | sed 's/^v//')" code.gitea.io/gitea

# Note: the pinning modules hold the controllers' whole module graph (go mod tidy), so the build
# needs no -mod=mod and writes nothing to go.sum; config/crd/bases of the same module versions
# is where the takeover test reads Flux's CRDs from.
$(BIN)/source-controller: $(SOURCE_CONTROLLER_MOD)/go.mod $(SOURCE_CONTROLLER_MOD)/go.sum
	@echo "==> Building bin/source-controller from source: Flux's Git fetcher, the old owner the takeover test moves add-ons away from ($(SOURCE_CONTROLLER_COLD) cold on 2 cores; cached afterwards)"
	cd $(SOURCE_CONTROLLER_MOD) && go build -ldflags=-w -o $@ github.com/fluxcd/source-controller

$(BIN)/kustomize-controller: $(KUSTOMIZE_CONTROLLER_MOD)/go.mod $(KUSTOMIZE_CONTROLLER_MOD)/go.sum
	@echo "==> Building bin/kustomize-controller from source: Flux's applier, the old owner the takeover test moves add-ons away from ($(KUSTOMIZE_CONTROLLER_COLD) cold on 2 cores; cached afterwards)"
	cd $(KUSTOMIZE_CONTROLLER_MOD) && go build -ldflags=-w -o $@ github.com/fluxcd/kustomize-controller

$(CONTROLLER_GEN):
	GOBIN=$(BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $@
	ln -sf $(notdir $@) $(BIN)/controller-gen

$(CRD_REF_DOCS):
	GOBIN=$(BIN) go install github.com/elastic/crd-ref-docs@$(CRD_REF_DOCS_VERSION)
	mv $(BIN)/crd-ref-docs $@
	ln -sf $(notdir $@) $(BIN)/crd-ref-docs

$(GOLANGCI_LINT):
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@
	ln -sf $(notdir $@) $(BIN)/golangci-lint

.PHONY: build
build: ## Build bin/convoy, stamped with VERSION, REVISION and BUILD_DATE (`convoy version`).
	@echo "==> Building bin/convoy: convoy's command and controller (about 5 minutes cold, with the Kubernetes libraries; seconds afterwards)"
	go build -ldflags '$(LDFLAGS)' -o $(BIN)/convoy ./cmd/convoy

##@ Test and run

.PHONY: test
test: ## Build what the tests need, verify, lint and run every test but the longest end-to-end ones (`make e2e`).
	@# Side by side: the servers are separate modules (few packages in common at the same
	@# versions), and each build leaves a core idle while it downloads modules and links.
	$(MAKE) -j4 $(CONTROL_PLANE) $(MONITORING) $(FORGE) $(CONTROLLER_GEN) $(GOLANGCI_LINT)
	$(MAKE) verify lint build
	@# The two sets run side by side: most of a test's time is spent waiting on API servers.
	@# The tests that run convoy as a process run bin/convoy, built just before.
	export CONVOY_TEST_CONVOY=$(BIN)/convoy; \
	CGO_ENABLED=1 go test -race $(GO_TEST_ARGS) -skip '$(E2E_REGEX)' -timeout $(GO_TEST_TIMEOUT) $(RACE_PACKAGES) & race=$$!; \
	status=0; go test $(GO_TEST_ARGS) -skip '$(E2E_REGEX)' -timeout $(GO_TEST_TIMEOUT) \
		$$(go list ./... | grep -vxF -f <(go list $(RACE_PACKAGES))) || status=$$?; \
	wait $$race || status=$$?; exit $$status

.PHONY: e2e
e2e: tools chromium build ## Run the longest end-to-end tests (E2E_TESTS: rollouts on the fleet, faults, the browser, the image; then test/sectors), which `make test` leaves out.
	@# test/sectors runs alone, after the others: its four API servers, four controllers and
	@# Gitea keep their timing (a soak of 5 s, polls every second) only with the cores to themselves.
	export CONVOY_TEST_CONVOY=$(BIN)/convoy; \
	CGO_ENABLED=1 go test -race $(GO_TEST_ARGS) -run '$(E2E_REGEX)' -timeout $(GO_TEST_TIMEOUT) \
		$$(go list $(E2E_PACKAGES) | grep -xF -f <(go list $(RACE_PACKAGES))) & race=$$!; \
	status=0; go test $(GO_TEST_ARGS) -run '$(E2E_REGEX)' -timeout $(GO_TEST_TIMEOUT) \
		$$(go list $(E2E_PACKAGES) | grep -vxF -f <(go list $(RACE_PACKAGES))) || status=$$?; \
	wait $$race || status=$$?; \
	CONVOY_TEST_SECTORS=1 go test $(GO_TEST_ARGS) -timeout 20m ./test/sectors || status=$$?; \
	exit $$status

.PHONY: e2e-forge
e2e-forge: $(CONTROL_PLANE) $(FORGE) build ## Run only the pull-request loop against Gitea (test/forgeloop, part of `make e2e`): about 2 minutes.
	CONVOY_TEST_CONVOY=$(BIN)/convoy go test ./test/forgeloop -count=1 -v -timeout 15m

.PHONY: e2e-takeover
e2e-takeover: $(CONTROL_PLANE) $(FLUX) build ## Run only the takeover of add-ons from a real Flux (test/takeover, part of `make e2e`): about 2 minutes.
	CONVOY_TEST_CONVOY=$(BIN)/convoy go test ./test/takeover -run '^TestTakeoverFromARunningFlux$$' -count=1 -v -timeout 15m

.PHONY: e2e-sectors
e2e-sectors: $(CONTROL_PLANE) $(FORGE) build ## Run only the promotion across four management clusters and Gitea (test/sectors, the last step of `make e2e`): about 4 minutes.
	CONVOY_TEST_SECTORS=1 CONVOY_TEST_CONVOY=$(BIN)/convoy go test ./test/sectors -count=1 -v -timeout 20m

.PHONY: chromium
chromium: ## Install Chromium with apt-get for the dashboard's browser test when it is missing (root with apt only).
	@if [ -n "$${CONVOY_CHROMIUM:-}" ] || command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing chromium for the dashboard's browser test..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
		echo "warning: chromium is missing and cannot be installed here (needs root and apt-get):"; \
		echo "  the browser test will fail; install it with: sudo apt-get install -y chromium (or set CONVOY_CHROMIUM)"; \
	fi

.PHONY: dashboard-screenshot
dashboard-screenshot: $(CONTROL_PLANE) chromium ## Run the dashboard's browser test and copy its rollout screenshot to docs/dashboard.png.
	CONVOY_SCREENSHOTS=$(BIN)/screenshots/dashboard go test ./cmd/convoy -run TestDashboardInBrowser -count=1
	mkdir -p docs && cp $(BIN)/screenshots/dashboard/rollout.png docs/dashboard.png

.PHONY: demo
demo: $(CONTROL_PLANE) build ## Build only what the demo runs (kube-apiserver, etcd, convoy, convoy-dev) and run convoy-dev: a local fleet and a live rollout.
	@echo "==> Building bin/convoy-dev: the demo (seconds once bin/convoy is built)"
	go build -o $(BIN)/convoy-dev ./cmd/convoy-dev
	$(BIN)/convoy-dev $(DEMO_ARGS)

.PHONY: faults
faults: $(CONTROL_PLANE) $(FLUX) build ## Run the fault harness (test/bench/cmd/faults): faults injected mid-rollout at 200 HostedClusters, a takeover from Flux among them; writes faults-results.json (FAULTS_ARGS=-clusters 50 for a quick run).
	go run ./test/bench/cmd/faults -convoy $(BIN)/convoy -out $(CURDIR)/faults-results.json $(FAULTS_ARGS)

.PHONY: soak
soak: $(CONTROL_PLANE) build ## Run the soak (test/bench/cmd/soak): 200 HostedClusters, five add-ons, a seeded schedule for 60 minutes; writes soak-results.json (SOAK_ARGS=-duration 15m -seed N).
	go run ./test/bench/cmd/soak -convoy $(BIN)/convoy -out $(CURDIR)/soak-results.json $(SOAK_ARGS)

.PHONY: soak-short
soak-short: $(CONTROL_PLANE) build ## Run the 2-minute soak (TestSoakShort, also in make test) alone, with a seed from the clock (CONVOY_SOAK_SEED=N replays one).
	CONVOY_TEST_CONVOY=$(BIN)/convoy go test ./test/bench -run '^TestSoakShort$$' -count=1 -v -timeout 15m

.PHONY: bench
bench: $(CONTROL_PLANE) $(FLUX) build ## Run test/bench: rollout, steady state, Flux beside the rollout, Git, hosted phases, sectors (about 33 minutes); writes bench-results.json (BENCH_ARGS=-short: under 10 minutes).
	go run ./test/bench/cmd -convoy $(BIN)/convoy -out $(CURDIR)/bench-results.json $(BENCH_ARGS)

.PHONY: bench-fleet
bench-fleet: $(CONTROL_PLANE) build ## Run test/bench's fleet scenario: 20 add-ons over 500 HostedClusters, four of them in a dependency chain (about an hour); writes bench-fleet-results.json.
	go run ./test/bench/cmd -convoy $(BIN)/convoy -scenarios fleet -out $(CURDIR)/bench-fleet-results.json $(BENCH_ARGS)

.PHONY: bench-tables
bench-tables: ## Rewrite the bench tables of README.md and docs/evidence fenced by bench-table markers from their runs' JSON (docs/evidence/runs).
	go run ./test/bench/cmd/table rewrite

##@ Release

.PHONY: image
image: ## Build the OCI image of a static convoy for PLATFORMS into dist/oci, without a container runtime; IMAGE=registry/name:tag pushes it.
	@for p in $(PLATFORMS); do \
		echo "building dist/bin/$$p/convoy"; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} go build -trimpath -ldflags '$(LDFLAGS) -s -w' \
			-o $(DIST)/bin/$$p/convoy ./cmd/convoy; \
	done
	go run ./hack/image -out $(DIST)/oci -version $(VERSION) -revision $(REVISION) -created $(BUILD_DATE) \
		$(foreach p,$(PLATFORMS),-binary $(p)=$(DIST)/bin/$(p)/convoy) $(if $(IMAGE),-push $(IMAGE))
	CONVOY_IMAGE_PLATFORMS='$(PLATFORMS)' go test ./hack/image -run TestMakeImageLayout -count=1 -v

.PHONY: release
release: ## Build the image of VERSION=v0.x.y (pushed with IMAGE=registry/name:tag) and write dist/install.yaml, pinned to its digest.
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+ ]] || { echo "make release needs VERSION=v0.x.y, not '$(VERSION)'"; exit 1; }
	$(MAKE) image VERSION=$(VERSION)
	go run ./hack/release -version $(VERSION) -layout $(DIST)/oci -deploy deploy -out $(DIST)/install.yaml \
		-previous-crds hack/release/testdata/previous-crds \
		-image $(or $(IMAGE),ghcr.io/convoy-gitops/convoy:$(VERSION))
