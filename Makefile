# SPDX-License-Identifier: MIT
# efap2p: one entry point for deps, build, test, run and bench.
#   make deps     install the Debian packages and Go modules (needs root or sudo)
#   make build    build/efap2p, build/libefasim.so, build/libefap2p.so ...
#   make test     go vet + gofmt check + go test + ctest (the README's test command)
#   make run      the main job on the embedded default machine (p5.48xlarge)
#   make fleet-test  efap2p check inside Slurm, Prometheus and NFD (root;
#                 installs FLEET_PACKAGES; CI runs it)
#   make bench    benchmarks, written to BENCHMARKS.md
#   make install  PREFIX (/usr/local), LIBDIR and DESTDIR: libefap2p, its Go
#                 core, the header, efap2p.pc, the efap2p tool, the emulator,
#                 the man pages, the systemd unit and udev rule (left disabled)
#   make uninstall  the same variables: removes what make install put there
#   make deb      Debian packages in build/deb/ (debian/, dpkg-buildpackage)
#   make kernel-truth  as root, by hand (not in CI): boot Debian's kernels
#                 under QEMU, hold the oracle to their verdicts and rewrite
#                 kerneltruth/fixtures/ (docs/kernel-releases.md)

GO      ?= go
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
# systemd and udev take their files from /usr/lib (or /lib) for PREFIX=/usr,
# from PREFIX/lib otherwise (/usr/local/lib/systemd/system, ...).
SYSTEMDUNITDIR ?= $(if $(filter /usr,$(PREFIX)),$(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /usr/lib/systemd/system),$(PREFIX)/lib/systemd/system)
UDEVRULESDIR ?= $(if $(filter /usr,$(PREFIX)),$(shell d=$$(pkg-config --variable=udevdir udev 2>/dev/null) && echo $$d/rules.d || echo /usr/lib/udev/rules.d),$(PREFIX)/lib/udev/rules.d)
SYSTEMCTL ?= /bin/systemctl
# run after installing to the live system (no DESTDIR); LDCONFIG=true skips it
LDCONFIG ?= ldconfig
APT_PACKAGES = libibverbs-dev ibverbs-providers ibverbs-utils python3-pyverbs \
	cmake pkg-config gcc g++ make valgrind graphviz \
	build-essential debhelper dpkg-dev lintian man-db \
	libcap2-bin util-linux prometheus pciutils \
	libfabric-bin udev python3-yaml
# The fleet engines `make fleet-test` runs efap2p check inside.
FLEET_PACKAGES = slurm-wlm munge prometheus prometheus-node-exporter curl python3
# The tool, as the Makefile and CMake build it: a PIE linked with libc by
# the C linker (as Debian wants binaries), its version and the libdir it
# is installed to written in.
GO_LDFLAGS = -linkmode=external -X main.version=$(VERSION) -X main.libDir=$(LIBDIR)
# CMake gets the install directories relative to PREFIX where they are
# under it, so that 'cmake --install --prefix DIR' moves them with it.
rel = $(patsubst $(PREFIX)/%,%,$(1))

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Tests write many small sysfs trees: on tmpfs when the machine has one.
TEST_TMPDIR ?= $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo $${TMPDIR:-/tmp})

.PHONY: all deps build go-build c-build test go-test c-test vet run fleet-test bench install uninstall deb clean fuzz kernel-truth

all: build

deps:
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		$(APT_PACKAGES)
	$(GO) mod download

build: go-build c-build

go-build:
	@mkdir -p $(BUILD)
	CGO_ENABLED=1 $(GO) build -trimpath -buildmode=pie -ldflags "$(GO_LDFLAGS)" -o $(BUILD)/efap2p ./cmd/efap2p

c-build:
	$(CMAKE) -S . -B $(BUILD)/cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEFAP2P_BUILD_DIR=$(abspath $(BUILD)) \
		-DCMAKE_INSTALL_PREFIX=$(PREFIX) -DCMAKE_INSTALL_BINDIR=$(call rel,$(BINDIR)) \
		-DCMAKE_INSTALL_LIBDIR=$(call rel,$(LIBDIR)) -DCMAKE_INSTALL_INCLUDEDIR=$(call rel,$(INCLUDEDIR)) \
		-DCMAKE_INSTALL_DATADIR=$(call rel,$(DATADIR)) -DCMAKE_INSTALL_MANDIR=$(call rel,$(MANDIR)) \
		-DEFAP2P_SYSTEMDUNITDIR=$(call rel,$(SYSTEMDUNITDIR)) -DEFAP2P_UDEVRULESDIR=$(call rel,$(UDEVRULESDIR)) \
		-DEFAP2P_SYSTEMCTL=$(SYSTEMCTL) -DEFAP2P_BUILD_TESTS=$(if $(NO_TESTS),OFF,ON) >/dev/null
	$(CMAKE) --build $(BUILD)/cmake -j

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

go-test: go-build
	TMPDIR=$(TEST_TMPDIR) $(GO) test ./...
	TMPDIR=$(TEST_TMPDIR) $(GO) test -race ./p2p/

# The C suites run programs inside `efap2p sim`: they need build/efap2p too.
c-test: go-build c-build
	cd $(BUILD)/cmake && ctest --output-on-failure

test: vet go-test c-test

run: build
	@./scripts/run-default.sh $(BUILD)

# efap2p check inside the real engines (ctests/fleet/fleet.sh), on emulated
# hosts: Slurm drains and resumes, Prometheus scrapes, NFD's labels. The
# daemons run as root on loopback; the packages are installed first.
fleet-test: go-build c-build
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(FLEET_PACKAGES)
	@for s in slurm prometheus nfd; do \
		timeout 600 bash ctests/fleet/fleet.sh $(BUILD)/efap2p $$s || { echo "fleet-test: $$s failed"; exit 1; }; done
	@echo "fleet-test: 3 passed, 0 failed"

bench: build
	@./scripts/bench.sh $(BUILD) > BENCHMARKS.md.tmp && mv BENCHMARKS.md.tmp BENCHMARKS.md
	@echo "wrote BENCHMARKS.md"

# Installs what 'make build' built (run that first, with the same PREFIX
# and LIBDIR): the library and its links, the Go core and the emulator's
# library in $(LIBDIR)/efap2p/ (where the library and 'efap2p sim' look for
# them), the tool, the header, the pkg-config file, the man pages, the
# valgrind suppressions, the systemd unit and the udev rule. The unit is
# not enabled: 'systemctl enable --now efap2p-topology.service' does that.
# 'cmake --install build/cmake' installs the same files (CMakeLists.txt).
INSTALLED_LIBS = libefap2p.so.$(VERSION) libefap2p.so.1 libefap2p.so
install:
	@for f in libefap2p.so.$(VERSION) libefap2p-core.so libefasim.so efap2p; do \
		[ -e $(BUILD)/$$f ] || { echo "$(BUILD)/$$f is missing: run 'make build' first" >&2; exit 1; }; done
	install -d $(DESTDIR)$(LIBDIR)/efap2p $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(INCLUDEDIR)/infiniband $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(DATADIR)/efap2p $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(UDEVRULESDIR)
	install -m 644 $(BUILD)/libefap2p.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libefap2p.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libefap2p.so.1
	ln -sf libefap2p.so.1 $(DESTDIR)$(LIBDIR)/libefap2p.so
	install -m 644 $(BUILD)/libefap2p-core.so $(BUILD)/libefasim.so $(DESTDIR)$(LIBDIR)/efap2p/
	install -m 755 $(BUILD)/efap2p $(DESTDIR)$(BINDIR)/
	install -m 644 include/infiniband/efadv_p2p.h $(DESTDIR)$(INCLUDEDIR)/infiniband/
	sed -e 's|@prefix@|$(PREFIX)|' -e 's|@libdir@|$(LIBDIR)|' -e 's|@includedir@|$(INCLUDEDIR)|' \
		-e 's|@version@|$(VERSION)|' efap2p.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/efap2p.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/efap2p.pc
	install -m 644 man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/*.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 644 dist/libefap2p.supp dist/efap2p.rules.yml dist/efap2p-check.daemonset.yaml $(DESTDIR)$(DATADIR)/efap2p/
	sed -e 's|@bindir@|$(BINDIR)|g' -e 's|@datadir@|$(DATADIR)|g' dist/efap2p-slurm-healthcheck.in > $(DESTDIR)$(DATADIR)/efap2p/slurm-healthcheck
	chmod 755 $(DESTDIR)$(DATADIR)/efap2p/slurm-healthcheck
	sed -e 's|@bindir@|$(BINDIR)|g' dist/efap2p-topology.service.in > $(DESTDIR)$(SYSTEMDUNITDIR)/efap2p-topology.service
	sed -e 's|@systemctl@|$(SYSTEMCTL)|g' dist/70-efap2p-topology.rules.in > $(DESTDIR)$(UDEVRULESDIR)/70-efap2p-topology.rules
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/efap2p-topology.service $(DESTDIR)$(UDEVRULESDIR)/70-efap2p-topology.rules
	@if [ -z "$(DESTDIR)" ]; then echo "$(LDCONFIG)"; $(LDCONFIG) || echo "note: $(LDCONFIG) failed; run it as root so that programs find libefap2p.so.1" >&2; fi

uninstall:
	rm -f $(addprefix $(DESTDIR)$(LIBDIR)/,$(INSTALLED_LIBS)) \
		$(DESTDIR)$(LIBDIR)/efap2p/libefap2p-core.so $(DESTDIR)$(LIBDIR)/efap2p/libefasim.so \
		$(DESTDIR)$(BINDIR)/efap2p $(DESTDIR)$(INCLUDEDIR)/infiniband/efadv_p2p.h \
		$(DESTDIR)$(LIBDIR)/pkgconfig/efap2p.pc $(DESTDIR)$(DATADIR)/efap2p/libefap2p.supp \
		$(addprefix $(DESTDIR)$(DATADIR)/efap2p/,efap2p.rules.yml efap2p-check.daemonset.yaml slurm-healthcheck) \
		$(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(wildcard man/*.1))) \
		$(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(wildcard man/*.3))) \
		$(DESTDIR)$(SYSTEMDUNITDIR)/efap2p-topology.service $(DESTDIR)$(UDEVRULESDIR)/70-efap2p-topology.rules
	-rmdir $(DESTDIR)$(LIBDIR)/efap2p $(DESTDIR)$(DATADIR)/efap2p 2>/dev/null
	@if [ -z "$(DESTDIR)" ]; then echo "$(LDCONFIG)"; $(LDCONFIG) || true; fi

# Debian packages (debian/), built from a copy of the tree in build/deb/ so
# that dpkg-buildpackage's files (it writes next to the source directory)
# stay in build/: libefap2p1, libefap2p-dev, efap2p and efap2p-sim.
DEB_SRC = $(BUILD)/deb/efap2p-$(VERSION)
deb:
	rm -rf $(BUILD)/deb && mkdir -p $(DEB_SRC)
	{ git ls-files -co --exclude-standard 2>/dev/null || find . -path ./$(BUILD) -prune -o -type f -print; } | \
		tar --ignore-failed-read -cf - -T - 2>/dev/null | tar -C $(DEB_SRC) -xf -
	cd $(DEB_SRC) && GO=$$(command -v $(GO)) dpkg-buildpackage -b -us -uc
	@ls $(BUILD)/deb/*.deb

fuzz:
	@./scripts/fuzz.sh

# Installs its own packages (linux-source-6.1, -6.12, qemu-system-x86,
# busybox-static, the kernel build tools); keeps kernel trees and images in
# ${XDG_CACHE_HOME:-$HOME/.cache}/efap2p/kernel-truth.
kernel-truth:
	GO=$(GO) ./kerneltruth/run.sh

clean:
	rm -rf $(BUILD)
