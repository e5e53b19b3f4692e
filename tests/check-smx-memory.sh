#!/usr/bin/env bash
# The memory btl/smx takes, on the host: the size of its pair rings (auto and set), how
# many it makes, a burst held within the fragment cap, a ring's and the chunk area's pages
# written at once, the footprint of large messages on a crowded node, and its limits where
# its chunk areas are too small (single copy from 4 KiB).
# (The other btl/smx checks: tests/check-smx-*.sh.)
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SMX_TOP/tests/smx/lib.sh"
smx_programs burst ringpages
smx_bench
# policy OUT KEY: the values of KEY (a pattern: 'pieces_in_flight', '[a-z0-9]*\.eager_limit')
# in the policy lines btl/smx printed at btl_base_verbose info, one per line
policy() { sed -n 's/.*btl:smx: policy: //p' <<<"$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# btl_smx_pair_ring_size auto: a process's first 4 rings 512 KiB, later ones
# 128 KiB (said only where it may make more than 4: a ring a peer, at most
# btl_smx_pair_rings_max); a size the user sets, for every ring
ring_case() { # ring_case NP WANT WHAT MPIRUN-ARGS (WANT: what follows "rings of ")
	local np=$1 want=$2 what=$3
	shift 3
	local said run=(mpirun -np "$np" --oversubscribe)
	run+=($(smx_root_args))
	out=$("${run[@]}" --mca btl smx,self --mca btl_base_verbose info "$@" \
		"$build/tests/mpi/anysource" 2>&1 | tr -d '\000' || true)
	said=$(grep -c "btl:smx: $np local processes, .*, rings of $want (" <<<"$out" || true)
	grep -q "^anysource: PASS" <<<"$out" && [ "$said" = "$np" ] &&
		echo "ok: rings of $want: $what" ||
		fail "ring size: want $np processes saying rings of $want ($what), got $said: $out"
}
ring_case 2 "512 KiB" "auto, 1 peer"
ring_case 5 "512 KiB" "auto, 4 peers"
ring_case 6 "512 KiB, 128 KiB after the first 4" "auto, 5 peers"
ring_case 10 "512 KiB, 128 KiB after the first 4" "auto, 9 peers"
ring_case 10 "512 KiB" "auto, 9 peers, at most 4 rings" --mca btl_smx_pair_rings_max 4
ring_case 2 "4 KiB" "4096 asked for" --mca btl_smx_pair_ring_size 4096
ring_case 10 "256 KiB" "262144 asked for, 9 peers" --mca btl_smx_pair_ring_size 262144

# A sender writes to a peer through the peer's queue until it has sent it
# btl_smx_pair_ring_after messages, then through a ring of its own (at most
# btl_smx_pair_rings_max of them): the MPI_T counter says how many, data intact either way
rings() { # rings MCA-ARGS...: each of the 4 processes' count of pair rings, or "failed"
	local out four=(mpirun -np 4 --oversubscribe)
	four+=($(smx_root_args))
	out=$("${four[@]}" --mca btl smx,self "$@" "$bench" --mode alltoall --sizes 64 \
		--samples 1 --target-mb 1 --print-pvar btl_smx_pair_rings 2>&1 | tr -d '\000' || true)
	grep -q "^alltoall,64," <<<"$out" || { echo "failed: $out"; return; }
	sed -n 's/^# pvar \([0-9]*\) btl_smx_pair_rings \([0-9]*\)$/\1:\2/p' <<<"$out" |
		sort | cut -d: -f2 | tr '\n' ' '
}
default_rings=$(rings)
no_rings=$(rings --mca btl_smx_pair_rings_max 0)
one_ring=$(rings --mca btl_smx_pair_rings_max 1)
late_rings=$(rings --mca btl_smx_pair_ring_after 1000000000)
[ "$default_rings" = "3 3 3 3 " ] && [ "$no_rings" = "0 0 0 0 " ] &&
	[ "$one_ring" = "1 1 1 1 " ] && [ "$late_rings" = "0 0 0 0 " ] &&
	echo "ok: 4 processes in an all-to-all make a ring to each peer (none with" \
		"pair_rings_max 0, one with 1, none before pair_ring_after), data intact" ||
	fail "pair rings: default '$default_rings' (want 3 each), max 0 '$no_rings', max 1" \
		"'$one_ring', after 1e9 '$late_rings'"
# ... of 512 KiB for its first 4 peers, 128 KiB for the others (auto), as it says at trace
six=(mpirun -np 6 --oversubscribe)
six+=($(smx_root_args))
out=$("${six[@]}" --mca btl smx,self --mca btl_base_verbose trace "$bench" --mode alltoall \
	--sizes 64 --samples 1 --target-mb 1 2>&1 | tr -d '\000' || true)
large=$(grep -c "btl:smx: .*: a ring of 512 KiB to " <<<"$out" || true)
small=$(grep -c "btl:smx: .*: a ring of 128 KiB to " <<<"$out" || true)
grep -q "^alltoall,64," <<<"$out" && [ "$large" = 24 ] && [ "$small" = 6 ] &&
	echo "ok: 6 processes in an all-to-all make rings of 512 KiB to 4 peers each, 128 KiB" \
		"to the fifth" ||
	fail "ring sizes: want 24 rings of 512 KiB and 6 of 128 KiB, got $large and $small: $out"

# A burst of 10000 sends of 16 KiB to a receiver that is not receiving yet: what the
# sender's rings cannot take waits in at most btl_smx_max_frags fragments (512 x 34 KiB),
# the rest in ob1's own queue, and every byte arrives in order. Without the cap the
# sender held about 200 MB here; the same run with a cap out of reach shows that the
# cap, not luck, bounds it.
# Its counters (btl_base_verbose info at finalize, the MPI_T variables' values) say so too.
burst_log=$(mktemp)
burst() { # burst MCA-ARGS...: the sender's peak memory growth in kB, or "failed"; the
	# job's output in $burst_log
	# (16 KiB sent eagerly whatever the class: far classes' default limit is 4 KiB)
	"${launch[@]}" --mca btl smx,self --mca btl_base_verbose info --mca btl_smx_eager_limit 20480 \
		"$@" "$build/tests/smx/burst" 10000 16384 2>&1 | tr -d '\000' >"$burst_log" || true
	if grep -q "^burst: PASS" "$burst_log"; then
		sed -n 's/^burst: rank 0: .*peak memory +\([0-9]*\) kB$/\1/p' "$burst_log"
	else
		echo "failed: $(cat "$burst_log")"
	fi
}
capped=$(burst)
# (the sender is rank 0: its counters line names [[job,1],0])
capped_line=$(grep -E "btl:smx: \[\[[0-9]+,[0-9]+\],0\]: " "$burst_log" || true)
mpit=$(sed -n 's/^burst: rank 0: MPI_T: btl_smx_sends_queued \([0-9]*\), btl_smx_frags_peak \([0-9]*\)$/\1 \2/p' \
	"$burst_log")
uncapped=$(burst --mca btl_smx_max_frags 1048576)
if [[ $capped =~ ^[0-9]+$ ]] && [[ $uncapped =~ ^[0-9]+$ ]] && [ "$capped" -le 49152 ] &&
	[ "$uncapped" -ge 102400 ]; then
	echo "ok: a burst of 10000 x 16 KiB grows the sender by $((capped / 1024)) MB" \
		"($((uncapped / 1024)) MB without the fragment cap), data intact"
else
	fail "burst: want at most 48 MB with the default cap, at least 100 MB without: $capped / $uncapped"
fi
queued=$(sed -n 's/.* \([0-9]*\) sends queued for room, at most 512 of btl_smx_max_frags 512 .*/\1/p' \
	<<<"$capped_line")
[ -n "$queued" ] && [ "$queued" -gt 0 ] && [ "$mpit" = "$queued 512" ] &&
	echo "ok: the sender's counters: $queued sends queued, 512 of 512 descriptors out at the" \
		"peak, the same through MPI_T" ||
	fail "burst: want queued sends and the cap reached, alike at finalize and through MPI_T" \
		"('$mpit'): $capped_line"
rm -f "$burst_log"

# A new pair ring's pages are all written when it is made, and a segment's chunk area
# when the segment is (tmpfs gives a page at its first write; a fault in the middle
# of later traffic costs whoever meets it, and makes its first transfers look dear
# to the measured choice): after 64 small messages, which keep to a ring's first 32
# KiB, the sender has its whole ring in memory: at least 512 KiB more than where it
# makes no ring by default, 4 MiB more with rings of 4 MiB; and where it makes no
# ring, at least its whole chunk area (btl_smx_budget_kb 4096 here: 4 MiB) but not
# 512 KiB more (no ring area written)
ring_rss() { # ring_rss MCA-ARGS...: rank 0's resident kB of its own segment, or "failed"
	local out
	out=$("${launch[@]}" $(smx_config_args smx-cma) "$@" "$build/tests/smx/ringpages" 2>&1 |
		tr -d '\000' || true)
	grep -q "^ringpages: PASS" <<<"$out" || { echo failed; return; }
	sed -n 's/^ringpages: rank 0: segment resident \([0-9]*\) kB$/\1/p' <<<"$out"
}
area=(--mca btl_smx_budget_kb 4096)
rss_auto=$(ring_rss "${area[@]}")
rss_4m=$(ring_rss "${area[@]}" --mca btl_smx_pair_ring_size 4194304)
rss_none=$(ring_rss "${area[@]}" --mca btl_smx_pair_ring_after 1000000)
[ "${rss_none:-0}" -ge 4096 ] 2>/dev/null && [ "$rss_none" -lt $((4096 + 512)) ] &&
	[ "${rss_auto:-0}" -ge $((rss_none + 512)) ] 2>/dev/null &&
	[ "${rss_4m:-0}" -ge $((rss_none + 4096)) ] 2>/dev/null &&
	echo "ok: a segment's chunk area and a new ring's pages are in memory at once: ${rss_none}" \
		"kB resident without a ring (a 4 MiB area), ${rss_auto} kB with a 512 KiB ring," \
		"${rss_4m} kB with 4 MiB" ||
	fail "area and ring pages (rank 0's segment, kB resident): '$rss_none' without a ring" \
		"(want 4096 to 4607), '$rss_auto' with a 512 KiB ring (want 512 more), '$rss_4m'" \
		"with 4 MiB (want 4096 more)"
# The footprint of large messages (btl_smx_policy.c, smx_footprint): on a crowded node
# (more processes than hardware threads) a peer's pieces in flight fill a quarter of
# the L2 (4 to 32) and whole-fragment chunks come round after half of it; two ranks,
# 32 pieces and a cycle of twice the L2 (at least 1 MiB)
# (hwloc's count, as btl/smx sees it: the allowed cpuset, which may differ from nproc's)
threads=$(hwloc-calc -N pu all 2>/dev/null || nproc)
over=$((threads + 1))
crowd=$(mpirun -np "$over" --oversubscribe --bind-to none $(smx_root_args) \
	$(smx_config_args smx-cma) --mca btl_base_verbose info "$build/tests/mpi/anysource" 2>&1 |
	tr -d '\000' || true)
two=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_base_verbose info \
	"$build/tests/mpi/anysource" 2>&1 | tr -d '\000' || true)
# the largest L2 (what btl/smx takes from hwloc), in bytes
l2=$(cat /sys/devices/system/cpu/cpu*/cache/index*/level 2>/dev/null | paste -d' ' - \
	<(cat /sys/devices/system/cpu/cpu*/cache/index*/size 2>/dev/null) |
	awk '$1 == 2 { n = $2 + 0; if ($2 ~ /M/) n *= 1024; if (n > m) m = n } END { print m * 1024 }')
want_pieces=$((l2 / 4 / 34816)); want_pieces=$((want_pieces < 4 ? 4 : want_pieces > 32 ? 32 : want_pieces))
want_cycle2=$((2 * l2 < 1048576 ? 1048576 : 2 * l2))
footprint() { echo "$(policy "$1" pieces_in_flight | sort -u | paste -sd,)/$(policy "$1" chunk_cycle | sort -u | paste -sd,)"; }
if ! grep -q "^anysource: PASS" <<<"$crowd" || ! grep -q "^anysource: PASS" <<<"$two"; then
	fail "footprint: the jobs failed: $crowd $two"
elif [ "${l2:-0}" -gt 0 ] 2>/dev/null; then
	[ "$(footprint "$crowd")" = "$want_pieces/$((l2 / 2))" ] &&
		[ "$(footprint "$two")" = "32/$want_cycle2" ] &&
		echo "ok: the footprint of large messages, L2 $((l2 >> 10)) KiB: $over processes on" \
			"$threads hardware threads $(footprint "$crowd") (pieces in flight/chunk cycle" \
			"bytes), 2 processes $(footprint "$two")" ||
		fail "footprint (pieces in flight/chunk cycle): crowded '$(footprint "$crowd")'" \
			"(want $want_pieces/$((l2 / 2))), 2 processes '$(footprint "$two")' (want" \
			"32/$want_cycle2)"
else
	fail "no L2 size in /sys/devices/system/cpu/cpu*/cache for the footprint check"
fi
# A crowded node whose chunk areas cannot hold a whole fragment for every peer
#  (btl_smx_policy.c, smx_cramped): from 4 KiB by single copy, as btl/sm; with room
#  (the crowded job above), or without a single copy, eagerly up to a fragment
cramped_limits() {
	echo "$(policy "$1" '[^=]*\.eager_limit' | sort -u | paste -sd,)/$(policy "$1" \
		'[^=]*\.single_copy_min' | sort -u | paste -sd,)"
}
many=$((threads * 6 > 12 ? threads * 6 : 12))
cramped=$(mpirun -np "$many" --oversubscribe --bind-to none $(smx_root_args) \
	$(smx_config_args smx-tight) --mca btl_base_verbose info "$build/tests/mpi/anysource" 2>&1 |
	tr -d '\000' || true)
cramped_nosc=$(mpirun -np "$many" --oversubscribe --bind-to none $(smx_root_args) \
	$(smx_config_args smx-nosc) --mca btl_smx_budget_kb 273 --mca btl_base_verbose info \
	"$build/tests/mpi/anysource" 2>&1 | tr -d '\000' || true)
# single copy where cma may be used here (the kernel may forbid it: then none is cramped);
# the crowded job's default area (16 MiB shared) is cramped too on a machine of many threads
sc=$(policy "$cramped" 'peer[0-9]*\.smsc' | sort -u | paste -sd,)
want_cramped=$([ "$sc" = 1 ] && echo 4096/4096 || echo 34816/auto)
want_crowd=$([ "$sc" = 1 ] && [ $((16777216 / over / 34816)) -lt $((over - 1)) ] &&
	echo 4096/4096 || echo 34816/auto)
if ! grep -q "^anysource: PASS" <<<"$cramped" || ! grep -q "^anysource: PASS" <<<"$cramped_nosc"; then
	fail "cramped node: the jobs failed: $cramped $cramped_nosc"
elif [ "$(cramped_limits "$cramped")" = "$want_cramped" ] &&
	[ "$(cramped_limits "$crowd")" = "$want_crowd" ] &&
	[ "$(cramped_limits "$cramped_nosc")" = "34816/auto" ]; then
	echo "ok: a crowded node's limits (eager/single copy from): $many processes in a 273 KiB" \
		"area $(cramped_limits "$cramped"), without single copy $(cramped_limits "$cramped_nosc")," \
		"$over processes in the default area $(cramped_limits "$crowd")"
else
	fail "crowded node's limits (eager/single copy from): $many processes in a 273 KiB area" \
		"'$(cramped_limits "$cramped")' (want $want_cramped), without single copy" \
		"'$(cramped_limits "$cramped_nosc")' (want 34816/auto), $over processes in the default" \
		"area '$(cramped_limits "$crowd")' (want $want_crowd)"
fi
exit $status
