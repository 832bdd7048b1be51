# novaedge-cpvip. `sudo make demo` and `sudo make test` do all set-up on a fresh Debian 12.
SHELL   := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# Package versions must start with a digit: a v-tag gives 1.2.3, else 0.1.0~gitDATE.SHA.
PKG_VERSION ?= $(shell v=$$(git describe --tags --match 'v[0-9]*' 2>/dev/null) && echo $${v\#v} || echo 0.1.0~git$$(git log -1 --format=%cd --date=format:%Y%m%d 2>/dev/null).$$(git rev-parse --short HEAD 2>/dev/null))
ARCH    ?= $(shell $(GO) env GOARCH)
# The architectures packaged and in the image index.
ARCHS   ?= amd64 arm64
# Every timestamp in packages, image layers and SBOMs: the commit's time, so
# two builds of one commit are byte-identical (make reproducible).
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
export SOURCE_DATE_EPOCH
NFPM    := $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.44.0
IMAGE_REPO ?= ghcr.io/novaedge/cpvip
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.imageRepo=$(IMAGE_REPO)
BIN     := bin/novaedge-cpvip
PKGS_UNIT := ./internal/... ./cmd/... ./manifests/... ./packaging/...
# The simulation runs in make sim; under -race here, a few schedules in parallel
# (one goroutine per CPU, each run a world of its own: nothing may be shared).
PKGS_RACE = $(filter-out %/internal/testing/sim,$(shell $(GO) list $(PKGS_UNIT)))
# Schedules the simulation runs in make test; SIM_BUDGET=10m runs for a time instead.
SIM_SEEDS ?= 3000
SIM_BUDGET ?= 0
# Executions per fuzz target. A count, not a duration: duration-based -fuzztime
# can fail with "context deadline exceeded" and no crasher (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 200000x

.PHONY: all build build-all reproducible deps realcp lint unit unit-arm64 sim monitoring e2e test fuzz bench stress demo package package-check image clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/novaedge-cpvip

# The static binary of every architecture in ARCHS: bin/linux-ARCH/novaedge-cpvip.
build-all:
	for a in $(ARCHS); do CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS)' -o bin/linux-$$a/novaedge-cpvip ./cmd/novaedge-cpvip || exit 1; done

deps:
	@test/tools/deps.sh

# The lab's real control plane: kube-apiserver v1.34.2, etcd v3.6.4 and a
# client-go client, built from their Go modules (test/realcp, a module of its
# own) into a cache outside the tree. First build about 6 min on 2 cores; then
# reused until test/realcp changes.
realcp:
	@test/tools/realcp.sh
# The systemd nodes' Debian tree (test/tools/systemd-tree.sh: debootstrap,
# about 35 s, mostly download) is built beside them, then cached the same way.
WITH_REALCP := { test/tools/systemd-tree.sh > .systemd-tree & tp=$$!; } && dir=$$(test/tools/realcp.sh) && export NOVAEDGE_REALCP_DIR=$$dir && kv=$$(test/tools/kubevip.sh) && export NOVAEDGE_KUBEVIP=$$kv && \
  wait $$tp && export NOVAEDGE_SYSTEMD_TREE=$$(cat .systemd-tree) &&
# Debian's Prometheus (test/tools/prometheus.sh, unpacked, not installed)
# runs the alert rules in the e2e.
WITH_PROMETHEUS := pr=$$(test/tools/prometheus.sh) && export NOVAEDGE_PROMETHEUS=$$pr/bin/prometheus &&

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd test/realcp && $(GO) vet ./cmd/kclient
	cd test/tools/nfdelay && $(GO) vet .
	$(GO) test -count=1 -run 'TestLinks|TestHeadings' ./internal/docgen
	$(GO) test -count=1 -run 'TestReferenceDoc|TestMetricsReference|TestLogReference|TestCLIReference|TestPortsReference|TestSandboxReference|TestAlertTable|TestMigrationDoc' ./internal/config ./internal/status ./internal/docgen ./cmd/novaedge-cpvip ./manifests ./internal/kubevip
	$(GO) test -count=1 -run 'TestResultsTableIsGenerated|TestGoalsTableIsGenerated|TestReadmeComparison|TestDocFigures|TestNoLooseFigures|TestDocDefaults|TestReadmeFrontPage|TestNoIssueNumbers' ./test/tools/benchtable

unit:
	$(GO) test -race -count=1 $(PKGS_RACE)
	$(GO) test -race -count=1 ./internal/testing/sim -run 'TestSimulation$$' -sim.seeds 40

# The deterministic simulation of the group (internal/testing/sim): SIM_SEEDS
# schedules (or SIM_BUDGET of them), then the check that it still finds
# each finding with its rule put back (sim-bite.sh).
sim:
	$(GO) test -count=1 -timeout 0 ./internal/testing/sim -sim.seeds $(SIM_SEEDS) -sim.budget $(SIM_BUDGET) -v 2>&1 | grep -vE '^(=== RUN|--- PASS|PASS)' ; exit $${PIPESTATUS[0]}
	test/tools/sim-bite.sh

# The unit tests of every package that touches bytes on the wire or the
# kernel, built for arm64 and run under qemu-user (Debian's qemu-user-static).
PKGS_ARM64 := ./internal/vrrp ./internal/bfd ./internal/quietio ./internal/ifaddr ./internal/reconcile ./internal/memtrim ./internal/config ./internal/acd
unit-arm64: deps
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64-static $(PKGS_ARM64)

# End-to-end tests in network namespaces with the real binary (root).
# TestAlertRules (the alert rules on a real Prometheus, about 5 min of
# timers in a lab of its own) runs beside the others, its log in
# e2e-alerts.log.
# BESIDE="fuzz reproducible" runs those targets at nice 19, idle I/O
# class, while the e2e runs (no lab, nothing the e2e reads or writes): the
# e2e waits on timers most of the time and leaves the cores idle, and its
# checks are state invariants, counts with margins and bounds taken from
# the mechanisms with room for a loaded machine (make bench holds the tight
# timings). Their output is in beside.log; the e2e fails if they do.
e2e: deps
	@rm -f beside.rc; if [ -n "$(BESIDE)" ]; then (s=$$SECONDS; nice -n 19 ionice -c 3 $(MAKE) --no-print-directory $(BESIDE) > beside.log 2>&1; rc=$$?; \
	  echo "beside the e2e: make $(BESIDE): exit $$rc after $$((SECONDS - s)) s" >> beside.log; echo $$rc > beside.rc) & fi; \
	rc=1; echo 1 > alerts.rc; rm -f e2e-alerts.log; $(WITH_REALCP) $(WITH_PROMETHEUS) { { $(GO) test -count=1 -timeout 30m -run '^TestAlertRules' -v ./test/e2e > e2e-alerts.log 2>&1; echo $$? > alerts.rc; } & \
	  $(GO) test -count=1 -timeout 45m -skip '^TestAlertRules' -v ./test/... 2>&1 | tee e2e.log | grep -E '^(=== RUN|--- |PASS|FAIL|ok)|FIGURE|_test.go'; rc=$${PIPESTATUS[0]}; }; \
	wait; if [ -n "$(BESIDE)" ]; then if [ "$$(cat beside.rc)" = 0 ]; then tail -3 beside.log; else tail -100 beside.log; rc=1; fi; rm -f beside.rc; fi; \
	echo "beside the e2e: TestAlertRules (e2e-alerts.log):"; if [ "$$(cat alerts.rc)" = 0 ]; then grep -E 'FIGURE|^--- |^ok' e2e-alerts.log; else tail -150 e2e-alerts.log 2>/dev/null; rc=1; fi; rm -f alerts.rc; exit $$rc

# Every fuzz target for FUZZTIME each.
fuzz:
	@for pkg in $$($(GO) list $(PKGS_UNIT)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# The alert rules (manifests/monitoring) under promtool: check rules, their
# unit tests (alerts_test.yaml), the scrape config, and every query of the
# rules and the dashboard parsed. Debian's promtool, unpacked by
# test/tools/prometheus.sh (about 10 s the first time).
monitoring:
	NOVAEDGE_PROMTOOL=$$(test/tools/prometheus.sh)/bin/promtool $(GO) test -count=1 -run 'TestQueries|TestPrometheusRule|TestDashboard|TestPodMonitor' -v ./manifests 2>&1 | grep -vE '^=== RUN'; exit $${PIPESTATUS[0]}

test: deps lint unit unit-arm64 sim monitoring e2e

# Benchmarks in namespace labs (root): failover outages, BFD detection and
# idle footprint, ours next to keepalived, GoBGP and FRR. Writes
# bench/results.json and bench/timeline.svg; the full log is bench.log.
# BENCH_TRIALS sets trials per row (default 20). Then checks bench/goals.json:
# a goal missed fails the bench (BENCH_GATE=ci: the CI bounds of a 2-trial run).
bench: deps
	rm -f bench/results.json
	$(WITH_REALCP) $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m -v ./test/e2e 2>&1 | tee bench.log | grep -E '^Benchmark|: ours|BFD [0-9]+ ms x 3,|graceful stop:|CPU|FAIL|Error'; test $${PIPESTATUS[0]} -eq 0
	$(GO) run ./test/tools/benchtable -goals bench/goals.json $(if $(BENCH_ROWS),,-all) $(if $(filter ci,$(BENCH_GATE)),-ci) bench/results.json
	@echo "timeline: bench/timeline.svg"

# The stress suite (test/e2e/stress_test.go, root): a real control plane,
# several candidate settings side by side, each condition (freezes, packet
# loss, CPU starvation, apiserver overload, real failures) for
# STRESS_SECONDS (600: about 2.5 h in all); make test runs it as a smoke
# (12 s a condition). STRESS_RUN and STRESS_CANDIDATES choose conditions
# and settings by name (regular expressions). The table is at the end of
# stress.log.
STRESS_SECONDS ?= 600
stress: deps
	$(WITH_REALCP) NOVAEDGE_STRESS_SECONDS=$(STRESS_SECONDS) NOVAEDGE_STRESS_RUN='$(STRESS_RUN)' NOVAEDGE_STRESS_CANDIDATES='$(STRESS_CANDIDATES)' $(GO) test -count=1 -run '^TestStress$$' -timeout 0 -v ./test/e2e 2>&1 | tee stress.log | grep -E '^(--- |ok|FAIL)|stress table|^\|'; test $${PIPESTATUS[0]} -eq 0

# .deb and .rpm of every architecture in dist/ (nfpm pinned, fetched through
# the Go module proxy), then the release files (packaging/dist.sh).
package: build-all
	mkdir -p dist bin/pkg
	for a in $(ARCHS); do cp bin/linux-$$a/novaedge-cpvip bin/pkg/novaedge-cpvip && \
	  for p in deb rpm; do VERSION=$(PKG_VERSION) ARCH=$$a $(NFPM) package --config nfpm.yaml --packager $$p --target dist/ || exit 1; done; done
	packaging/dist.sh $(VERSION) $(ARCHS)
	ls -l dist

# OCI image layout in dist/oci: one image index, an image per architecture,
# from the static binaries, no container engine, named $(IMAGE_REPO):$(VERSION):
# the image `novaedge-cpvip manifest pod` of the same build names. Load it
# with e.g. `tar -C dist/oci -cf x.tar . && ctr -n k8s.io images import
# --all-platforms x.tar` or skopeo copy oci:dist/oci ….
image: build-all
	$(GO) run ./packaging/oci -bin $$(for a in $(ARCHS); do printf '%s=bin/linux-%s/novaedge-cpvip,' $$a $$a; done | sed 's/,$$//') -out dist/oci -name $(IMAGE_REPO) -tag $(VERSION)
	$(GO) run ./packaging/oci -verify dist/oci
	packaging/dist.sh $(VERSION) $(ARCHS)

# Two builds of this commit, byte for byte: packages, image layout,
# binaries, SBOMs. The first with this machine's Go build cache; the second
# compiles the binaries with an empty one (nothing reused: the compiler's
# output alone) and packs them again (-o build-all: not rebuilt) with the
# same tools, which ship nothing of their own. Prints both SHA256SUMS digests.
reproducible:
	rm -rf dist bin && $(MAKE) -s package image >/dev/null && mv dist dist.1
	rm -rf bin && c=$$(mktemp -d) && GOCACHE=$$c $(MAKE) -s build-all >/dev/null; rc=$$?; rm -rf $$c; exit $$rc
	$(MAKE) -s -o build-all package image >/dev/null
	diff dist.1/SHA256SUMS dist/SHA256SUMS && diff -r dist.1/oci dist/oci
	@echo "reproducible: first $$(sha256sum < dist.1/SHA256SUMS | cut -c1-64), second $$(sha256sum < dist/SHA256SUMS | cut -c1-64)"
	rm -rf dist.1

# Builds the packages, installs the .deb here and checks what it put down (root).
package-check: package
	test/tools/package-check.sh

# REAL=1: the same story on a real control plane (etcd + kube-apiserver, make realcp).
demo: deps build
ifdef REAL
	$(WITH_REALCP) $(GO) run ./test/demo -bin $(BIN) -real
else
	$(GO) run ./test/demo -bin $(BIN)
endif

clean:
	rm -rf bin dist e2e.log e2e-alerts.log bench.log stress.log
