#!/usr/bin/env bash
# The benchmark inside the test guest: smsc/knemlike beside cma and beside no single copy,
# under stock btl/sm, and btl/smx carrying its rendezvous through knemlike (single copy
# pinned from 8 KiB: in the guest, a shared-L3 pair starts on double copy and a single copy
# that emulation makes dear keeps it there as measured), interleaved in one run. TCG timings are not
# performance evidence: the table is labelled EMULATED. What is checked: every
# configuration produced a median at every size, knemlike really carried the large
# messages (its copy counter, or the faults of its attachments or exports, moved), and btl/smx's own count of single-copy gets, which
# each of its processes prints at finalize, is above 0.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$SMX_TOP/build}
csv=$build/bench-vm.csv
log=$build/bench-vm.stderr
rm -f "$csv" "$log"
. "$SMX_TOP/tests/configurations.sh"
single8k=$(smx_config_args smx-knemlike-single8k)
cd "$SMX_TOP"
"$SMX_TOP/tests/vm/run-in-vm" bash -c "
	used() { echo \$((\$(cat /sys/class/misc/knemlike/stats/copies) + \$(cat /sys/class/misc/knemlike/stats/attach_faults) + \$(cat /sys/class/misc/knemlike/stats/export_faults))); }
	before=\$(used)
	tests/bench/run-bench --np 2 --mode pingpong --reps 2 --samples 2 --sizes 0,64K,1M \
		--off-cache 16 --preset sm-cma --preset sm-knemlike --preset sm-nosc \
		--config 'smx-knemlike-single8k=$single8k --mca btl_base_verbose info' --csv '$csv' 2>'$log'
	rc=\$?
	cat '$log' >&2
	[ \$rc = 0 ] || exit 1
	after=\$(used)
	echo \"knemlike copies, attachment and export faults during the benchmark: \$((after - before))\"
	[ \$((after - before)) -gt 0 ] || { echo 'FAIL: knemlike never copied'; exit 1; }"
medians=$(awk -F, '$1 == "median" && $10 == 1 && $7 > 0' "$csv" | wc -l)
[ "$medians" = 12 ] || { echo "FAIL: expected 12 emulated medians in $csv, found $medians"; exit 1; }
echo "ok: 4 configurations x 3 sizes, labelled emulated"
single=$(smx_transfer_counts "$(grep -a '^\[smx-knemlike-single8k\] ' "$log")" | awk '{ print $2 }')
rm -f "$log"
[ "$single" -gt 0 ] || { echo "FAIL: btl/smx + knemlike (single copy from 8 KiB) made no single-copy get"; exit 1; }
echo "ok: btl/smx moved $single rendezvous transfers through knemlike"
