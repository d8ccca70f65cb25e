# efap2p: one entry point for deps, build, test, run and bench.
#   make deps     install the Debian packages and Go modules (needs root or sudo)
#   make build    build/efap2p, build/libefasim.so, build/libefap2p.so ...
#   make test     go vet + gofmt check + go test + ctest (the README's test command)
#   make run      the main job on the embedded default machine (p5.48xlarge)
#   make bench    benchmarks, written to BENCHMARKS.md

GO      ?= go
BUILD   ?= build
CMAKE   ?= cmake
PREFIX  ?= /usr/local
DESTDIR ?=
APT_PACKAGES = libibverbs-dev ibverbs-providers ibverbs-utils python3-pyverbs \
	cmake pkg-config gcc g++ make valgrind graphviz

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
	$(CMAKE) -S . -B $(BUILD)/cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEFAP2P_BUILD_DIR=$(abspath $(BUILD)) >/dev/null
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

run: go-build
	@./scripts/run-default.sh $(BUILD)

bench: build
	@./scripts/bench.sh $(BUILD) > BENCHMARKS.md.tmp && mv BENCHMARKS.md.tmp BENCHMARKS.md
	@echo "wrote BENCHMARKS.md"

fuzz:
	@./scripts/fuzz.sh

clean:
	rm -rf $(BUILD)
