#!/bin/sh
# SPDX-License-Identifier: MIT
# make bench's scaling section runs to its end on two small synthetic
# machines and prints a row for each and the fitted exponents. Its figures
# are not checked (timings are reported, never asserted): only that the
# script that writes them does not stop half-way, as it did when the node
# check it times reported findings.
#   check_bench_scaling.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
out=$(BENCH_SCALING_SIZES="128 256" "$src/scripts/bench-scaling.sh" "$build") || {
	echo "check_bench_scaling: bench-scaling.sh failed (exit $?)"; exit 1; }
for want in '^| 128 | [1-9]' '^| 256 | [1-9]' '^| export wall time | n^' '^| pairs | n^2'; do
	if ! printf '%s\n' "$out" | grep -q -- "$want"; then
		printf 'check_bench_scaling: no line matching %s in:\n%s\n' "$want" "$out"
		exit 1
	fi
done
echo "check_bench_scaling: 2 machines, exponents fitted"
