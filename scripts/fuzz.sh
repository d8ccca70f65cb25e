#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make fuzz: run every Go fuzz target for FUZZTIME (default 30s) each.
# With a FUZZTIME of a few seconds the Go fuzzer can stop with "context
# deadline exceeded" while it is still minimizing a new input: not a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${FUZZTIME:-30s}
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
		echo "== $pkg $f ($t)"
		go test -run "^$" -fuzz "^$f\$" -fuzztime "$t" -fuzzminimizetime "${FUZZMINIMIZETIME:-5s}" "$pkg"
	done
done
