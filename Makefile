# SPDX-License-Identifier: MIT
# efap2p: one entry point for deps, build, test, run and bench.
#   make deps     install what make run needs: RUN_PACKAGES and the Go modules
#                 (as root, or through sudo)
#   make test-deps  and what the tests need besides (APT_PACKAGES)
#   make build    build/efap2p, build/libefasim.so, build/libefap2p.so ...
#   make test     go vet + gofmt check + go test + ctest (the README's test command)
#   make test-programs  perftest, qperf, Open MPI, fabtests checks over the emulator
#   make test-debian13  the same build and suites on Debian 13 (rdma-core 56,
#                 libfabric 2.1), in a root made with mmdebstrap (root)
#   make run      the main job on the embedded default machine (p5.48xlarge)
#   make fleet-test  efap2p check inside Slurm, Prometheus and NFD (root;
#                 installs FLEET_PACKAGES; CI runs it)
#   make bench    benchmarks, written to BENCHMARKS.md
#   make install  PREFIX (/usr/local), LIBDIR and DESTDIR: libefap2p, its Go
#                 core, the header, efap2p.pc, the efap2p tool, the emulator
#                 and its header, the man pages, the documents the help names
#                 (DOCDIR), the check report's schema, the systemd unit and
#                 udev rule (left disabled)
#   make uninstall  the same variables: removes what make install put there
#   make deb      Debian packages in build/deb/ (debian/, dpkg-buildpackage)
#   make image    the DaemonSet's OCI image (root): Debian 12 and make deb's
#                 packages, no registry (scripts/build-image.sh)
# The builds are quiet: one line when they succeed, their whole output when
# they fail (also kept in build/*.log); V=1 shows every command as it runs.
# JOBS (default: the number of CPUs) bounds the build's parallel jobs.
#   make kernel-truth  as root, by hand (not in CI): boot Debian's kernels
#                 under QEMU, hold the oracle to their verdicts and rewrite
#                 kerneltruth/fixtures/ (docs/kernel-releases.md)

# Go: go.mod's release or newer, not a Debian package; on PATH, else where
# go.dev's tarball unpacks (GO_FALLBACK), as debian/rules looks for it.
GO_NEEDED   := $(shell sed -n 's/^go //p' go.mod)
GO_FALLBACK ?= /usr/local/go
ifeq ($(origin GO),undefined)
GO := $(shell command -v go 2>/dev/null)
ifeq ($(GO),)
ifneq ($(wildcard $(GO_FALLBACK)/bin/go),)
GO := $(GO_FALLBACK)/bin/go
ifeq ($(MAKELEVEL),0)
$(info make: go is not on PATH: using $(GO))
endif
else
GO := go
GO_MISSING := 1
endif
endif
endif
BUILD   ?= build
CMAKE   ?= cmake
VERSION := $(shell cat VERSION)
PREFIX  ?= /usr/local
DESTDIR ?=
# Debian's multiarch directory (x86_64-linux-gnu), where the distribution
# puts libraries under /usr: LIBDIR defaults to it for PREFIX=/usr, as
# CMake's GNUInstallDirs does, else to PREFIX/lib. Build and install with
# the same PREFIX and LIBDIR: the library and the tool look for their
# companions in LIBDIR/efap2p/ (and next to themselves).
MULTIARCH := $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || $${CC:-cc} -print-multiarch 2>/dev/null)
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(if $(and $(filter /usr,$(PREFIX)),$(MULTIARCH)),$(PREFIX)/lib/$(MULTIARCH),$(PREFIX)/lib)
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR  ?= $(DATADIR)/man
DOCDIR  ?= $(DATADIR)/doc/efap2p
# systemd and udev take their files from /usr/lib (or /lib) for PREFIX=/usr,
# from PREFIX/lib otherwise (/usr/local/lib/systemd/system, ...).
SYSTEMDUNITDIR ?= $(if $(filter /usr,$(PREFIX)),$(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /usr/lib/systemd/system),$(PREFIX)/lib/systemd/system)
UDEVRULESDIR ?= $(if $(filter /usr,$(PREFIX)),$(shell d=$$(pkg-config --variable=udevdir udev 2>/dev/null) && echo $$d/rules.d || echo /usr/lib/udev/rules.d),$(PREFIX)/lib/udev/rules.d)
SYSTEMCTL ?= /bin/systemctl
# run after installing to the live system (no DESTDIR); LDCONFIG=true skips it
LDCONFIG ?= ldconfig
# What `make deps` installs: what `make run` needs (the compiler, cmake,
# rdma-core's headers and libefa, python3 for the build's layer check, the
# CA certificates Go downloads its modules with), found and checked in a
# bare Debian 12 root (scripts/ci-fresh-host.sh).
RUN_PACKAGES = gcc libc6-dev cmake pkg-config libibverbs-dev ibverbs-providers \
	python3 ca-certificates
# What the tests need besides (`make test-deps` installs both lists).
APT_PACKAGES = $(RUN_PACKAGES) ibverbs-utils python3-pyverbs mmdebstrap \
	g++ make valgrind graphviz \
	build-essential debhelper dpkg-dev lintian man-db \
	libcap2-bin util-linux prometheus pciutils hwloc \
	libfabric-bin udev python3-yaml strace time \
	libfabric-dev openmpi-bin libopenmpi-dev perftest qperf shellcheck
# The fleet engines `make fleet-test` runs efap2p check inside, and what
# builds and runs the DaemonSet's image (the packages, mmdebstrap, podman).
FLEET_PACKAGES = slurm-wlm munge prometheus prometheus-node-exporter curl python3 \
	python3-yaml build-essential debhelper dpkg-dev mmdebstrap podman runc
# The OCI image the DaemonSet names (dist/efap2p-check.daemonset.yaml):
# Debian 12 from Debian's archive with the packages of make deb, built
# without a registry and saved as an OCI archive (scripts/build-image.sh).
IMAGE = localhost/efap2p:$(VERSION)
IMAGE_ARCHIVE = $(BUILD)/efap2p-image.tar
# The tool, as the Makefile and CMake build it: a PIE linked with libc by
# the C linker (as Debian wants binaries), its version and the libdir it
# is installed to written in.
GO_LDFLAGS = -linkmode=external -X main.version=$(VERSION) -X main.libDir=$(LIBDIR) -X main.commit=$(EFAP2P_COMMIT) \
	-X main.docDir=$(DOCDIR) -X main.dataDir=$(DATADIR)/efap2p -X main.includeDir=$(INCLUDEDIR)
# The commit --version names (+modified for a tree with changes); make deb
# passes it into the copy it builds the packages from.
ifeq ($(origin EFAP2P_COMMIT),undefined)
EFAP2P_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff-index --quiet HEAD -- 2>/dev/null || { git rev-parse HEAD >/dev/null 2>&1 && echo +modified; })
endif
# CMake gets the install directories relative to PREFIX where they are
# under it, so that 'cmake --install --prefix DIR' moves them with it.
rel = $(patsubst $(PREFIX)/%,%,$(1))

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
V    ?= 0
# $(call quietly,NAME,COMMAND) says what it builds (doing_NAME, one line:
# a cold build takes minutes), then runs COMMAND with its output in
# $(BUILD)/NAME.log, printed only when it fails; with V=1, as it runs.
doing_go-build = building $(BUILD)/efap2p (go build)
doing_c-build = building $(BUILD)/libefap2p.so, its Go core, libefasim.so$(if $(NO_TESTS),, and the test programs) (cmake)
doing_deb = building the Debian packages in $(BUILD)/deb (dpkg-buildpackage)
doing_image = building the OCI image $(IMAGE) in $(IMAGE_ARCHIVE) (mmdebstrap, podman)
ifeq ($(V),1)
quietly = $(2)
else
quietly = @echo "$(doing_$(1))"; mkdir -p $(BUILD); { $(2); } > $(BUILD)/$(1).log 2>&1 || { \
	cat $(BUILD)/$(1).log; echo "make: $(1) failed (its output above, also in $(BUILD)/$(1).log)" >&2; exit 1; }
endif

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Tests write many small sysfs trees: on tmpfs when the machine has one.
TEST_TMPDIR ?= $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo $${TMPDIR:-/tmp})

.PHONY: all deps test-deps build image go-build c-build go-check test test-programs test-debian13 go-test c-test vet run fleet-test bench install uninstall deb clean fuzz kernel-truth

all: build

deps:
	@scripts/apt-install.sh "make deps" $(BUILD)/apt.log $(RUN_PACKAGES)
	$(go_check)
	@echo "make deps: the Go modules (go mod download)"
	@$(GO) mod download

test-deps:
	@scripts/apt-install.sh "make test-deps" $(BUILD)/apt.log $(APT_PACKAGES)
	$(go_check)
	@echo "make test-deps: the Go modules (go mod download)"
	@$(GO) mod download

# make -s print-VAR prints a variable (the package lists, GO) for the scripts
print-%:
	@echo $($*)

build: go-build c-build
	@echo "built $(BUILD)/: efap2p, libefap2p.so, libefap2p-core.so, libefasim.so$(if $(NO_TESTS),, and the test programs)$(if $(filter 1,$(V)),, (make V=1 shows the commands))"

# Go, or one line saying where to get it (the README's Set-up).
go_check = @if [ -n "$(GO_MISSING)" ]; then \
		echo "make: no Go toolchain: go is not on PATH and $(GO_FALLBACK)/bin/go is not there; install Go $(GO_NEEDED) or newer from https://go.dev/dl (unpacked in /usr/local), or set GO=" >&2; exit 1; fi; \
	have=$$($(GO) env GOVERSION 2>/dev/null | sed 's/^go//'); \
	if [ -z "$$have" ]; then echo "make: $(GO) does not run: install Go $(GO_NEEDED) or newer from https://go.dev/dl, or set GO=" >&2; exit 1; fi; \
	if [ "$$(printf '%s\n%s\n' "$(GO_NEEDED)" "$$have" | sort -V | head -1)" != "$(GO_NEEDED)" ]; then \
		echo "make: $(GO) is go$$have; go.mod needs go$(GO_NEEDED) or newer (https://go.dev/dl)" >&2; exit 1; fi
go-check:
	$(go_check)

go-build: go-check
	$(call quietly,go-build,CGO_ENABLED=1 $(GO) build -trimpath -buildmode=pie -ldflags "$(GO_LDFLAGS)" -o $(BUILD)/efap2p ./cmd/efap2p)

c-build: go-check
	$(call quietly,c-build,$(CMAKE) -S . -B $(BUILD)/cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEFAP2P_BUILD_DIR=$(abspath $(BUILD)) \
		-DCMAKE_INSTALL_PREFIX=$(PREFIX) -DCMAKE_INSTALL_BINDIR=$(call rel,$(BINDIR)) \
		-DCMAKE_INSTALL_LIBDIR=$(call rel,$(LIBDIR)) -DCMAKE_INSTALL_INCLUDEDIR=$(call rel,$(INCLUDEDIR)) \
		-DCMAKE_INSTALL_DATADIR=$(call rel,$(DATADIR)) -DCMAKE_INSTALL_MANDIR=$(call rel,$(MANDIR)) \
		-DCMAKE_INSTALL_DOCDIR=$(call rel,$(DOCDIR)) \
		-DEFAP2P_SYSTEMDUNITDIR=$(call rel,$(SYSTEMDUNITDIR)) -DEFAP2P_UDEVRULESDIR=$(call rel,$(UDEVRULESDIR)) \
		-DEFAP2P_SYSTEMCTL=$(SYSTEMCTL) -DEFAP2P_BUILD_TESTS=$(if $(NO_TESTS),OFF,ON) -DGO_EXECUTABLE=$(GO) -DEFAP2P_COMMIT=$(EFAP2P_COMMIT) >/dev/null && \
	$(CMAKE) --build $(BUILD)/cmake -j $(JOBS))

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

go-test: go-build
	TMPDIR=$(TEST_TMPDIR) $(GO) test ./...
	TMPDIR=$(TEST_TMPDIR) $(GO) test -race ./p2p/

# The C suites run programs inside `efap2p sim`: they need build/efap2p too.
c-test: go-build c-build
	cd $(BUILD)/cmake && ctest --output-on-failure -LE programs

# Programs nobody here wrote over the emulator (perftest, qperf, Open MPI,
# ibv_ud_pingpong, the fabtests checks), one emulated host and two: minutes,
# so not in `make test`; .ci/run runs them.
test-programs: go-build c-build
	cd $(BUILD)/cmake && ctest --output-on-failure -L programs

test: vet go-test c-test

# Debian 13's stack (rdma-core 56.1, libfabric 2.1.0) beside this one: a
# Debian 13 root made with mmdebstrap from Debian's archive (once, kept in
# $(BUILD)/debian13/ until its package list changes), the checkout mounted
# in it, and every ctest suite (test-programs' too) and the Go tests run
# there on this build, unchanged (scripts/debian13.sh; as root).
test-debian13: go-build c-build
	@scripts/apt-install.sh "make test-debian13" $(BUILD)/apt.log mmdebstrap
	$(SUDO) env GO=$(GO) scripts/debian13.sh $(BUILD) test

run: build
	@./scripts/run-default.sh $(BUILD)

# efap2p check inside the real engines (ctests/fleet/fleet.sh), on emulated
# hosts: Slurm drains and resumes, Prometheus scrapes, NFD's labels, the
# Slurm TaskProlog's environment in srun's tasks, and the DaemonSet's
# container run by podman from make image's archive. The
# daemons run as root on loopback; the packages are installed first.
fleet-test: export EFAP2P_IMAGE = $(IMAGE)
fleet-test: export EFAP2P_IMAGE_ARCHIVE = $(abspath $(IMAGE_ARCHIVE))
fleet-test: go-build c-build
	@scripts/apt-install.sh "make fleet-test" $(BUILD)/apt.log $(FLEET_PACKAGES)
	@$(MAKE) --no-print-directory image
	@for s in slurm prometheus nfd taskprolog podman; do \
		timeout 600 bash ctests/fleet/fleet.sh $(BUILD)/efap2p $$s || { echo "fleet-test: $$s failed"; exit 1; }; done
	@echo "fleet-test: 5 passed, 0 failed"

bench: build
	@./scripts/bench.sh $(BUILD) > $(BUILD)/BENCHMARKS.md.tmp || { rm -f $(BUILD)/BENCHMARKS.md.tmp; exit 1; }
	@mv $(BUILD)/BENCHMARKS.md.tmp BENCHMARKS.md
	@echo "wrote BENCHMARKS.md"

# Installs what 'make build' built (run that first, with the same PREFIX
# and LIBDIR): the library and its links, the Go core and the emulator's
# library in $(LIBDIR)/efap2p/ (where the library and 'efap2p sim' look for
# them), the tool, the header, the pkg-config file, the man pages, the
# valgrind suppressions, the systemd unit and the udev rule. The unit is
# not enabled: 'systemctl enable --now efap2p-topology.service' does that.
# 'cmake --install build/cmake' installs the same files (CMakeLists.txt).
INSTALLED_LIBS = libefap2p.so.$(VERSION) libefap2p.so.1 libefap2p.so
# The documents the tool's help and the man pages point to, in DOCDIR
# (three under other names: the machine-model format, the emulator's and the
# library's READMEs).
DOCS = README.md docs/operators.md docs/kernel-releases.md docs/topology-file.md docs/nccl-topology.md docs/consumers.md
INSTALLED_DOCS = $(notdir $(DOCS)) machine-models.md emulator.md library.md
install:
	@for f in libefap2p.so.$(VERSION) libefap2p-core.so libefasim.so efap2p; do \
		[ -e $(BUILD)/$$f ] || { echo "$(BUILD)/$$f is missing: run 'make build' first" >&2; exit 1; }; done
	install -d $(DESTDIR)$(LIBDIR)/efap2p $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(INCLUDEDIR)/infiniband $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(DATADIR)/efap2p $(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(UDEVRULESDIR)
	install -m 644 $(BUILD)/libefap2p.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libefap2p.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libefap2p.so.1
	ln -sf libefap2p.so.1 $(DESTDIR)$(LIBDIR)/libefap2p.so
	install -m 644 $(BUILD)/libefap2p-core.so $(BUILD)/libefasim.so $(DESTDIR)$(LIBDIR)/efap2p/
	install -m 755 $(BUILD)/efap2p $(DESTDIR)$(BINDIR)/
	install -m 644 include/infiniband/efadv_p2p.h $(DESTDIR)$(INCLUDEDIR)/infiniband/
	install -m 644 sim/preload/efasim.h $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@prefix@|$(PREFIX)|' -e 's|@libdir@|$(LIBDIR)|' -e 's|@includedir@|$(INCLUDEDIR)|' \
		-e 's|@version@|$(VERSION)|' efap2p.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/efap2p.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/efap2p.pc
	install -m 644 man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/*.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 644 dist/libefap2p.supp dist/efap2p.rules.yml dist/efap2p-check.daemonset.yaml docs/check-report.schema.json \
		$(DESTDIR)$(DATADIR)/efap2p/
	sed -e 's|@bindir@|$(BINDIR)|g' -e 's|@datadir@|$(DATADIR)|g' dist/efap2p-slurm-healthcheck.in > $(DESTDIR)$(DATADIR)/efap2p/slurm-healthcheck
	chmod 755 $(DESTDIR)$(DATADIR)/efap2p/slurm-healthcheck
	sed -e 's|@bindir@|$(BINDIR)|g' -e 's|@datadir@|$(DATADIR)|g' dist/efap2p-slurm-taskprolog.in > $(DESTDIR)$(DATADIR)/efap2p/slurm-taskprolog
	chmod 755 $(DESTDIR)$(DATADIR)/efap2p/slurm-taskprolog
	install -m 644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	install -m 644 models/machines/README.md $(DESTDIR)$(DOCDIR)/machine-models.md
	install -m 644 sim/preload/README.md $(DESTDIR)$(DOCDIR)/emulator.md
	install -m 644 shim/README.md $(DESTDIR)$(DOCDIR)/library.md
	sed -e 's|@bindir@|$(BINDIR)|g' dist/efap2p-topology.service.in > $(DESTDIR)$(SYSTEMDUNITDIR)/efap2p-topology.service
	sed -e 's|@systemctl@|$(SYSTEMCTL)|g' dist/70-efap2p-topology.rules.in > $(DESTDIR)$(UDEVRULESDIR)/70-efap2p-topology.rules
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/efap2p-topology.service $(DESTDIR)$(UDEVRULESDIR)/70-efap2p-topology.rules
	@if [ -z "$(DESTDIR)" ]; then echo "$(LDCONFIG)"; $(LDCONFIG) || echo "note: $(LDCONFIG) failed; run it as root so that programs find libefap2p.so.1" >&2; fi

uninstall:
	rm -f $(addprefix $(DESTDIR)$(LIBDIR)/,$(INSTALLED_LIBS)) \
		$(DESTDIR)$(LIBDIR)/efap2p/libefap2p-core.so $(DESTDIR)$(LIBDIR)/efap2p/libefasim.so \
		$(DESTDIR)$(BINDIR)/efap2p $(DESTDIR)$(INCLUDEDIR)/infiniband/efadv_p2p.h $(DESTDIR)$(INCLUDEDIR)/efasim.h \
		$(DESTDIR)$(LIBDIR)/pkgconfig/efap2p.pc $(DESTDIR)$(DATADIR)/efap2p/libefap2p.supp \
		$(addprefix $(DESTDIR)$(DATADIR)/efap2p/,efap2p.rules.yml efap2p-check.daemonset.yaml slurm-healthcheck slurm-taskprolog) \
		$(DESTDIR)$(DATADIR)/efap2p/check-report.schema.json $(addprefix $(DESTDIR)$(DOCDIR)/,$(INSTALLED_DOCS)) \
		$(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(wildcard man/*.1))) \
		$(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(wildcard man/*.3))) \
		$(DESTDIR)$(SYSTEMDUNITDIR)/efap2p-topology.service $(DESTDIR)$(UDEVRULESDIR)/70-efap2p-topology.rules
	-rmdir $(DESTDIR)$(LIBDIR)/efap2p $(DESTDIR)$(DATADIR)/efap2p $(DESTDIR)$(DOCDIR) 2>/dev/null
	@if [ -z "$(DESTDIR)" ]; then echo "$(LDCONFIG)"; $(LDCONFIG) || true; fi

# Debian packages (debian/), built from a copy of the tree in build/deb/ so
# that dpkg-buildpackage's files (it writes next to the source directory)
# stay in build/: libefap2p1, libefap2p-dev, efap2p and efap2p-sim.
DEB_SRC = $(BUILD)/deb/efap2p-$(VERSION)
deb:
	$(call quietly,deb,rm -rf $(BUILD)/deb && mkdir -p $(DEB_SRC) && \
	{ git ls-files -co --exclude-standard 2>/dev/null || find . -path ./$(BUILD) -prune -o -type f -print; } | \
		tar --ignore-failed-read -cf - -T - 2>/dev/null | tar -C $(DEB_SRC) -xf - && \
	(cd $(DEB_SRC) && EFAP2P_COMMIT=$(EFAP2P_COMMIT) GO=$$(command -v $(GO)) dpkg-buildpackage -b -us -uc))
	@touch $(BUILD)/deb/built
	@ls $(BUILD)/deb/*.deb

# make deb again only when a file it packs changed since (make image)
$(BUILD)/deb/built: $(wildcard $(shell git ls-files -co --exclude-standard 2>/dev/null))
	@$(MAKE) --no-print-directory deb

# The DaemonSet's image (root): make fleet-test runs it as the manifest says.
image: $(BUILD)/deb/built
	$(call quietly,image,scripts/build-image.sh $(BUILD)/deb $(IMAGE) $(IMAGE_ARCHIVE))
	@echo "$(IMAGE): $(IMAGE_ARCHIVE) (podman load -i $(IMAGE_ARCHIVE))"

fuzz:
	@./scripts/fuzz.sh

# Installs its own packages (linux-source-6.1, -6.12, qemu-system-x86,
# busybox-static, the kernel build tools); keeps kernel trees and images in
# ${XDG_CACHE_HOME:-$HOME/.cache}/efap2p/kernel-truth.
kernel-truth:
	GO=$(GO) ./kerneltruth/run.sh

clean:
	rm -rf $(BUILD)
