#!/usr/bin/env bash
# The benchmark runs the stock configurations side by side in one run (short run): every
# configuration gets a median at every size, with a ratio against the baseline, in the
# table and in the CSV. Numbers are not judged here: benchmarks are evidence, not tests.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=${SMX_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
status=0
for mode in pingpong alltoall; do
	"$top/tests/bench/run-bench" --np 2 --mode "$mode" --reps 2 --samples 2 \
		--sizes 0,4K,1M --preset sm-cma --preset sm-nosc --csv "$csv"
	# 3 sizes x 2 configurations of medians, each with a finite ratio.
	medians=$(awk -F, '$1 == "median" && $9 != "nan" && $7 > 0' "$csv" | wc -l)
	if [ "$medians" != 6 ]; then
		echo "FAIL: $mode: expected 6 medians with ratios in the CSV, found $medians"
		status=1
	fi
done
exit $status
