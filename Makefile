# SPDX-License-Identifier: MIT
# efap2p: one entry point for deps, build, test, run and bench.
#   make deps     install the Debian packages and Go modules (needs root or sudo)
#   make build    build/efap2p, build/libefasim.so, build/libefap2p.so ...
#   make test     go vet + gofmt check + go test + ctest (the README's test command)
#   make run      the main job on the embedded default machine (p5.48xlarge)
#   make bench    benchmarks, written to BENCHMARKS.md
#   make install  PREFIX (/usr/local) and DESTDIR: libefap2p, its Go core,
#                 the header, efap2p.pc, the efap2p tool, the man pages

GO      ?= go
BUILD   ?= build
CMAKE   ?= cmake
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR  ?= $(PREFIX)/share/man
APT_PACKAGES = libibverbs-dev ibverbs-providers ibverbs-utils python3-pyverbs \
	cmake pkg-config gcc g++ make valgrind graphviz libfabric-bin

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Tests write many small sysfs trees: on tmpfs when the machine has one.
TEST_TMPDIR ?= $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo $${TMPDIR:-/tmp})

.PHONY: all deps build go-build c-build test go-test c-test vet run bench install clean fuzz

all: build

deps:
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		$(APT_PACKAGES)
	$(GO) mod download

build: go-build c-build

go-build:
	@mkdir -p $(BUILD)
	$(GO) build -o $(BUILD)/efap2p ./cmd/efap2p

c-build:
	$(CMAKE) -S . -B $(BUILD)/cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEFAP2P_BUILD_DIR=$(abspath $(BUILD)) \
		-DEFAP2P_INSTALL_LIBDIR=$(LIBDIR) >/dev/null
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

bench: build
	@./scripts/bench.sh $(BUILD) > BENCHMARKS.md.tmp && mv BENCHMARKS.md.tmp BENCHMARKS.md
	@echo "wrote BENCHMARKS.md"

# Installs what 'make build' built (run that first): the library and its
# links, the Go core and the emulator's library in $(LIBDIR)/efap2p/ (where
# the library and 'efap2p sim' look for them), the tool, the header, the
# pkg-config file and the man pages.
install:
	@for f in libefap2p.so.1.0.0 libefap2p-core.so libefasim.so efap2p; do \
		[ -e $(BUILD)/$$f ] || { echo "$(BUILD)/$$f is missing: run 'make build' first" >&2; exit 1; }; done
	install -d $(DESTDIR)$(LIBDIR)/efap2p $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(INCLUDEDIR)/infiniband $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3
	install -m 755 $(BUILD)/libefap2p.so.1.0.0 $(DESTDIR)$(LIBDIR)/
	ln -sf libefap2p.so.1.0.0 $(DESTDIR)$(LIBDIR)/libefap2p.so.1
	ln -sf libefap2p.so.1 $(DESTDIR)$(LIBDIR)/libefap2p.so
	install -m 755 $(BUILD)/libefap2p-core.so $(BUILD)/libefasim.so $(DESTDIR)$(LIBDIR)/efap2p/
	install -m 755 $(BUILD)/efap2p $(DESTDIR)$(BINDIR)/
	install -m 644 include/infiniband/efadv_p2p.h $(DESTDIR)$(INCLUDEDIR)/infiniband/
	sed -e 's|@prefix@|$(PREFIX)|' -e 's|@libdir@|$(LIBDIR)|' -e 's|@includedir@|$(INCLUDEDIR)|' \
		efap2p.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/efap2p.pc
	install -m 644 man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/*.3 $(DESTDIR)$(MANDIR)/man3/

fuzz:
	@./scripts/fuzz.sh

clean:
	rm -rf $(BUILD)
