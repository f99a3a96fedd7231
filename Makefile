# magnum-conductor in Go. `make help` lists the targets.
GO        ?= go
BIN       := bin
CONF      ?= etc/magnum/magnum-dev.conf
PKGS      := ./...
BINARIES  := magnum-conductor magnum-db-manage magnumctl
GOTESTFLAGS ?= -count=1 -timeout 60m
# make test's steps, each with a -timeout near its need (a hung test fails
# its step in minutes, not after CI's whole budget), run through
# hack/gotest, which repeats what names a failure at the end of the output.
# The in-process packages take under 4 minutes each alone (api/oslo,
# drivers/capi/e2e), the real-controller tests about 20 in all.
GOTEST      := ./hack/gotest $(GO) test -count=1
RACETIMEOUT ?= 20m
# The test-only Kubernetes API server (full kube-apiserver with etcd, and
# kube-controller-manager as the tests' garbage collector) is its own
# module: k8s.io/kubernetes stays out of the product's go.mod. So are the
# Cluster API managers the tests run (they pin other k8s.io versions).
KUBEAPISERVER := test/kubeapiserver
CAPIMANAGERS  := test/capimanagers
# The CAPO manager (cluster-api-provider-openstack v0.14.2, the module root
# package), with the Cluster API v1.12, controller-runtime v0.22 and k8s.io
# v0.34 it pins. The module has no package of its own, only that tool
# (`go vet ./...` there finds nothing to vet): lint vets the tool, which
# checks that go.mod and go.sum still build it.
CAPOMANAGER   := test/capomanager
# An out-of-tree cluster driver with its own conductor binary, in its own
# module (a replace points it at this repository): built and tested with the
# rest, so that the driver contract and package service keep working for
# outside drivers.
EXAMPLE := examples/outoftree

# The packaging (Debian packages, OCI image) is a module of its own too:
# go-containerregistry stays out of the product's go.mod.
PACKAGING := packaging
DIST      ?= dist

.PHONY: help build run test test-steps race unit bench chaos lint services sample docs clean bench-capi-scale apihost-deb interop-nightly deb image package-test

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-13s %s\n", $$1, $$2}'

build: ## build every binary into bin/
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ $(addprefix ./cmd/,$(BINARIES))

run: build ## start magnum-conductor on the embedded default (SQLite file under var/, RabbitMQ on 127.0.0.1)
	@mkdir -p var
	$(BIN)/magnum-conductor --config-file $(CONF)

# The packages whose tests run the conductor's code in process (the end-to-end
# and interop tests start the built binaries, which the race detector does not
# see into): `make test` runs their tests once, under the race detector.
RACEPKGS := ./api/... ./periodic/... ./conductor/... ./certmanager/... ./db/... ./drivers/... ./cmd/... ./service/... \
	./internal/...
# The rest of ./... (the end-to-end, interop and packaging-free tests that
# start built binaries or Python peers, config, migrations, apihost).
PLAINPKGS = $$($(GO) list $(PKGS) | grep -v -E '/magnum-conductor/(api|periodic|conductor|certmanager|db|drivers|cmd|service|internal)(/|$$)')

# The tests against the real Cluster API controllers (TestRealCAPI*) run
# without the race detector: their time goes to the controllers' processes,
# which it does not see into, and the driver code they run is run under it
# by the integration tests. Every other test runs once: the in-process
# packages under the race detector, the rest (which start built binaries
# and Python peers) plain.
# The tests that need the OpenStack control plane (test/openstack) start it
# once (test/openstack/up, shared by every test binary of the run);
# hack/openstack-down stops it when the steps end, passed or failed.
test: ## every test, unit and integration (needs MariaDB and RabbitMQ: see `make services`)
	./hack/openstack-down $(MAKE) --no-print-directory test-steps

test-steps:
	./hack/step vet $(GO) vet $(PKGS)
	@echo "building the test Kubernetes API server, garbage collector, Cluster API and CAPO managers ($(KUBEAPISERVER), $(CAPIMANAGERS), $(CAPOMANAGER); cached by content, about 30 minutes when cold)"
	./hack/step prebuild $(GO) run ./drivers/capi/internal/apitest/prebuild
	@echo "the in-process packages' tests under the race detector"
	./hack/step race $(GOTEST) -race -timeout $(RACETIMEOUT) -skip '^TestRealCAPI' $(RACEPKGS)
	@echo "the tests against the real Cluster API controllers"
	./hack/step real-capi $(GOTEST) -timeout 60m -run '^TestRealCAPI' ./drivers/capi
	@echo "the tests that start the built binaries and the Python peers"
	./hack/step binaries-and-peers $(GOTEST) -timeout 30m $(PLAINPKGS)
	@echo "the out-of-tree example driver and its conductor binary ($(EXAMPLE))"
	./hack/step example-vet $(GO) vet -C $(EXAMPLE) ./...
	./hack/step example ./hack/gotest $(GO) test -C $(EXAMPLE) -count=1 -race -timeout $(RACETIMEOUT) ./...
	./hack/step package-test $(MAKE) package-test
	@echo "restarting RabbitMQ under running calls (rabbitmqctl stop_app/start_app), alone: it would break other tests"
	OSLO_BROKER_RESTART_TEST=1 ./hack/step broker-restart $(GOTEST) -timeout 20m -p 1 -run '^(TestLiveBrokerRestart|TestBrokerRestart)$$' ./api/oslo ./test/e2e

race: ## only the in-process tests under the race detector (the first part of `make test`)
	$(GOTEST) -race -timeout $(RACETIMEOUT) -skip '^TestRealCAPI' $(RACEPKGS)

# -short: the tests that need MariaDB or RabbitMQ skip (testkit.NeedsService,
# called by dbtest and the broker helpers), and so do the ones that start the
# test Kubernetes API server; the Python peers' tests run when they are
# installed (pyrelease) and skip otherwise.
unit: ## only the tests that need no service (no MariaDB, RabbitMQ or Kubernetes API server)
	$(GO) test -short -count=1 $(PKGS)

# The Cluster API driver's scale benchmark fills the test API server with
# 10,000 clusters (80,000 objects and their status: about half an hour on
# two idle cores, well over an hour on busy ones): one iteration of each
# case, and a timeout of its own.
CAPISCALE := $(GO) test -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout 180m ./drivers/capi/

bench: build ## benchmarks, and the side-by-side comparison with the Python conductor
	$(GO) test -run '^$$' -bench . -skip '^BenchmarkScale$$' -benchtime 2s ./api/... ./certmanager/... ./periodic/... ./drivers/...
	$(CAPISCALE)
	$(GO) run ./test/bench

bench-capi-scale: ## only the Cluster API driver's scale benchmark (1,000 and 10,000 clusters)
	$(CAPISCALE)

interop-nightly: ## the live interop sides CI leaves out for time: the 15.0.1 side of the lifecycle scenario
	MAGNUM_INTEROP_NIGHTLY=1 $(GO) test $(GOTESTFLAGS) -run '^TestLifecycleMatchesPythonConductor$$/^15\.0\.1$$' ./test/interop/lifecycle

# The chaos suite starts RabbitMQ and MariaDB Galera nodes of its own (other
# ports, node names and data directories; the shared broker and database are
# never stopped) and kills them, and conductors, with kill -9 under load. It
# takes about 20 minutes, too long for `make test`; CHAOS selects scenarios.
CHAOS ?= .

chaos: ## the chaos suite (test/chaos): faults injected under load, what held; about 20 minutes
	$(GO) test -tags chaos -count=1 -timeout 90m -v -run '$(CHAOS)' ./test/chaos

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# golangci-lint runs the linters go vet and staticcheck do not cover (errors
# dropped or compared without errors.Is, response bodies, requests without a
# context, credentials and TLS, the house rules): the list and every
# exclusion, with its reason, are in .golangci.yml. Like staticcheck it is
# fetched through the Go module proxy, outside go.mod; go run keeps the built
# binary in the build cache (the first build takes a few minutes).
# GOLANGCIFLAGS=--concurrency=1 on a busy machine.
GOLANGCI := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
GOLANGCIFLAGS ?=

lint: ## gofmt, go vet, staticcheck (staticcheck.conf) and golangci-lint (.golangci.yml), fetched through the Go module proxy
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)
	$(GO) vet -tags chaos ./test/chaos
	$(GO) vet -C $(KUBEAPISERVER) ./...
	$(GO) vet -C $(CAPIMANAGERS) ./...
	$(GO) vet -C $(CAPOMANAGER) tool
	$(GO) vet -C $(EXAMPLE) ./...
	$(GO) run $(STATICCHECK) $(PKGS)
	$(GO) run $(STATICCHECK) -tags chaos ./test/chaos
	$(GO) -C $(EXAMPLE) run $(STATICCHECK) ./...
	$(GO) vet -C $(PACKAGING) ./...
	$(GO) -C $(PACKAGING) run $(STATICCHECK) ./...
	$(GO) run $(GOLANGCI) run $(GOLANGCIFLAGS) ./...
	$(GO) -C $(EXAMPLE) run $(GOLANGCI) run -c $(CURDIR)/.golangci.yml $(GOLANGCIFLAGS) ./...
	$(GO) -C $(PACKAGING) run $(GOLANGCI) run -c $(CURDIR)/.golangci.yml $(GOLANGCIFLAGS) ./...

services: ## start MariaDB and RabbitMQ if they are down, install the Python peers (15.0.1 on the host, 23.0.0 in a chroot built once) and build the OpenStack control plane's chroot once (test/openstack; docs/openstack-testing.md)
	bash .ci/services

apihost-deb: ## build bin/python3-magnum-conductor-go_*.deb, the Go drivers' entry points for magnum-api hosts (apihost/)
	bash apihost/build-deb $(BIN)

sample: ## regenerate etc/magnum/magnum.conf.sample
	$(GO) run ./config/gen > etc/magnum/magnum.conf.sample

# The option, label and add-on tables of README.md and docs/*.md are
# generated from the code (between <!-- BEGIN GENERATED: name --> markers);
# hack/docgen's tests fail when they are stale or a link is broken.
docs: ## regenerate the generated tables of docs/ and check the documentation's links
	$(GO) run ./hack/docgen

deb: ## Debian packages magnum-conductor-go and magnum-db-manage-go into dist/ (dpkg-deb; reproducible)
	$(GO) run -C $(PACKAGING) ./cmd/mkpkg -src $(CURDIR) -out $(abspath $(DIST)) deb

image: ## the conductor's OCI image as a tarball in dist/ (no container daemon; reproducible)
	$(GO) run -C $(PACKAGING) ./cmd/mkpkg -src $(CURDIR) -out $(abspath $(DIST)) image

package-test: ## the packaging's tests: a Debian chroot, the image under podman (root; `make services` first)
	$(GO) test -C $(PACKAGING) $(GOTESTFLAGS) ./...

clean: ## remove build output and the embedded database
	rm -rf $(BIN) var $(DIST)
