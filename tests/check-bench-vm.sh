#!/usr/bin/env bash
# The benchmark inside the test guest: smsc/knemlike beside cma and beside no single copy,
# under stock btl/sm, interleaved in one run. TCG timings are not performance evidence:
# the table is labelled EMULATED. What is checked: every configuration produced a median
# at every size, and knemlike really carried the large messages (its copy counter moved).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=${SMX_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
build=${SMX_BUILD:-$top/build}
csv=$build/bench-vm.csv
rm -f "$csv"
cd "$top"
"$top/tests/vm/run-in-vm" bash -c "
	before=\$(cat /sys/class/misc/knemlike/stats/copies)
	tests/bench/run-bench --np 2 --mode pingpong --reps 2 --samples 2 --sizes 0,64K,1M \
		--off-cache 16 --preset sm-cma --preset sm-knemlike --preset sm-nosc --csv '$csv' || exit 1
	after=\$(cat /sys/class/misc/knemlike/stats/copies)
	echo \"knemlike copies during the benchmark: \$((after - before))\"
	[ \$((after - before)) -gt 0 ] || { echo 'FAIL: knemlike never copied'; exit 1; }"
medians=$(awk -F, '$1 == "median" && $10 == 1 && $7 > 0' "$csv" | wc -l)
[ "$medians" = 9 ] || { echo "FAIL: expected 9 emulated medians in $csv, found $medians"; exit 1; }
echo "ok: 3 configurations x 3 sizes, labelled emulated"
