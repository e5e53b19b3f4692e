#!/usr/bin/env bash
# The scaling probe (tests/bench/run-scale, smx_scale) at up to 32 ranks on this node,
# btl/smx beside btl/sm: every job checks every byte of its all-to-all and of its first
# ping-pong message, every configuration reports each metric at each N, and no job leaves
# shared memory behind. What the numbers are is evidence, not a test (docs/performance.md,
# "At scale").
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT

"$SMX_TOP/tests/bench/run-scale" --ranks 2,8,32 --reps 1 --samples 2 --sizes 0,256,4K \
	--preset smx-cma --preset sm-cma --csv "$csv" --timeout 600
for label in smx-cma sm-cma; do
	for n in 2 8 32; do
		row=$(awk -F, -v l="$label" -v n="$n" '$1 == l && $2 == n' "$csv")
		[ -n "$row" ] || { fail "$label at $n ranks: no row in the CSV"; continue; }
		IFS=, read -r _ _ _ init _ _ left a2a lat0 lat256 lat4k <<<"$row"
		awk -v i="$init" -v t="$a2a" -v a="$lat0" -v b="$lat256" -v c="$lat4k" \
			'BEGIN { exit !(i > 0 && t > 0 && a > 0 && b > 0 && c > 0) }' ||
			fail "$label at $n ranks: a time that is not positive: $row"
		[ "$left" = 0 ] || fail "$label at $n ranks: $left bytes left in /dev/shm after the job"
	done
done
# btl/smx reserves the pages of its chunk area as it first uses them (its 'auto' budget of
# 8 MiB a process at 2 ranks is a bound, not what it takes): after MPI_Init two processes
# hold less than 1 MiB of /dev/shm (16 MiB when the area was reserved at init)
col() { awk -F, -v l="$1" -v n="$2" -v c="$3" '$1 == l && $2 == n { print $c }' "$csv"; }
i2=$(col smx-cma 2 5)
if [ -n "$i2" ]; then
	[ "$i2" -lt 1048576 ] &&
		echo "ok: btl/smx at 2 ranks holds $i2 bytes of /dev/shm after MPI_Init" ||
		fail "btl/smx at 2 ranks holds $i2 bytes of /dev/shm after MPI_Init (want < 1 MiB)"
fi
# btl/smx's shared memory grows with the processes, not with their pairs: from 8 to 32
# ranks (4 times the processes, 16 times the pairs) what all-pairs traffic leaves in use
# may grow 8 times at most (it grew 26 times when every pair had rings of its own)
s8=$(col smx-cma 8 6) s32=$(col smx-cma 32 6)
if [ -n "$s8" ] && [ -n "$s32" ]; then
	awk -v a="$s8" -v b="$s32" 'BEGIN { exit !(b <= 8 * (a > 65536 ? a : 65536)) }' &&
		echo "ok: btl/smx after all-pairs traffic: $s8 bytes at 8 ranks, $s32 at 32" ||
		fail "btl/smx after all-pairs traffic: $s8 bytes at 8 ranks, $s32 at 32 (more than 8x)"
fi

# The measured pair runs as on a node with a core per rank: in a job with more ranks than
# CPUs, ranks 0 and 1 are pinned to a CPU each and stop the yield that Open MPI does in an
# oversubscribed job (both said on smx_scale's '#' lines), while the others wait in
# flock() and are released at the end (the job ends).
bin=$(mktemp -d)
trap 'rm -f "$csv"; rm -rf "$bin"' EXIT
"${MPICC:-mpicc}" -O2 -o "$bin/smx_scale" "$SMX_TOP/tests/bench/smx_scale.c" "$SMX_TOP/tests/bench/bench_util.c"
n=$(($(nproc) + 2))
root=()
root=($(smx_root_args))
if out=$(timeout 300 mpirun "${root[@]}" -np "$n" --bind-to none --oversubscribe \
	--mca btl smx,self --mca smsc cma "$bin/smx_scale" --sizes 0,64 --samples 2 2>&1); then
	grep -q '^# ranks 0 and 1 pinned to CPUs [0-9]* and [0-9]* for the ping-pong$' <<<"$out" &&
		echo "ok: the measured pair pinned at $n ranks" ||
		fail "the measured pair was not pinned at $n ranks: $(grep '^#' <<<"$out")"
	grep -q '^# the pair did not yield when idle for the ping-pong (Open MPI yields' <<<"$out" &&
		echo "ok: the measured pair did not yield at $n ranks (Open MPI's yield turned off)" ||
		fail "the measured pair's yield at $n ranks: $(grep '^#' <<<"$out")"
else
	fail "smx_scale at $n ranks failed or hung: $out"
fi
[ $status = 0 ] && echo "ok: every configuration at 2, 8, 32 ranks; nothing left in /dev/shm"
exit $status
