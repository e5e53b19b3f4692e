#!/usr/bin/env bash
# The ways btl/smx's messages take, on the host: pins of a class's single-copy threshold
# take their path whatever it costs; the counters of the two kinds of get follow the
# configuration; otherwise the way each peer's messages take moves as the receiver
# measures it (a dear single copy given up, a sender away computing served by single
# copy), pushes ahead are taken by double copy, and a late receiver gets messages eagerly
# until it catches up. (The other btl/smx checks: tests/check-smx-*.sh.)
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SMX_TOP/tests/smx/lib.sh"
smx_programs latesender latereceiver
smx_bench
# final_ways OUT: the peers' ways in each process's last policy line (a process prints its
# policy at add_procs, and at finalize where it changed), one process a line
final_ways() {
	sed -n 's/^\(\[[^]]*\]\) btl:smx: policy: /\1 /p' <<<"$1" |
		awk '{ w = ""; for (i = 2; i <= NF; i++) if ($i ~ /^peer[0-9]+\.ways=/) w = w " " $i
			last[$1] = w } END { for (p in last) print substr(last[p], 2) }'
}

# Pins: a class's single-copy threshold set by a parameter is the way of every
# rendezvous, whatever single copy costs here (nothing is measured there). An all-to-all
# of 64 KiB (the benchmark checks each message's first and last byte; the MPI suite's
# configurations smx-single and smx-double every byte): single copy from 1 byte, eager
# limit 128: every get by single copy (process_vm_readv, smsc/cma's copy_from, counted
# with strace), none by double copy, every range of each peer's ways 's'; never, with
# cma there: every get by double copy, no process_vm_readv, no range 's'
# pinned CONFIG: "SINGLE DOUBLE READS WAYS" (the gets summed over both ranks, the reads of
# another process's memory, the distinct letters of the peers' ways at finalize), or
# "failed"
pinned() {
	local trace out
	trace=$(mktemp -d)
	"${launch[@]}" $(smx_config_args "$1") --mca btl_base_verbose info \
		strace -ff -qq -e trace=process_vm_readv -o "$trace/t" "$bench" --mode alltoall \
		--sizes 64K --samples 2 >"$trace/out" 2>&1 || true
	out=$(tr -d '\000' <"$trace/out")
	if ! grep -q "^alltoall,65536," <<<"$out"; then
		echo "failed: $out" >&2
		echo failed
	else
		echo "$(both_ranks_gets "$out")" \
			"$(for t in "$trace"/t*; do grep -v "process_vm_readv(${t##*.}," "$t" || true; done |
				grep -c "^[0-9]* *process_vm_readv" || true)" \
			"$(final_ways "$out" | sed 's/peer[0-9]*\.ways=//g' | tr ', ' '\n\n' |
				sed -n 's/^[0-9]*[km]://p' | sort -u | paste -sd/)"
	fi
	rm -rf "$trace"
}
# both_ranks_gets OUTPUT: "SINGLE DOUBLE" summed over the two ranks' finalize lines, or
# "failed" where there are not two
both_ranks_gets() {
	smx_transfer_counts "$1" | awk '{ print ($1 == 2 ? $2 " " $3 : "failed") }'
}
read -r s_single s_double s_reads s_ways < <(pinned smx-single)
read -r n_single n_double n_reads n_ways < <(pinned smx-double)
[ "${s_single:-0}" -gt 0 ] 2>/dev/null && [ "$s_double" = 0 ] && [ "${s_reads:-0}" -gt 0 ] 2>/dev/null &&
	[ "$s_ways" = s ] && [ "$n_single" = 0 ] && [ "${n_double:-0}" -gt 0 ] 2>/dev/null &&
	[ "$n_reads" = 0 ] && [[ $n_ways != *s* ]] &&
	echo "ok: single copy pinned from 1 byte: $s_single gets by single copy ($s_reads reads)," \
		"none by double, ways '$s_ways'; never: $n_double by double copy, no read, ways '$n_ways'" ||
	fail "pins (single double reads ways): from 1 byte '$s_single $s_double $s_reads $s_ways'" \
		"(want N 0 N s), never '$n_single $n_double $n_reads $n_ways' (want 0 N 0, no s)"

# The counters of the two kinds of get in the MPI suite's p2p (every byte checked): none
# by single copy without an SMSC component, some with cma and single copy pinned from
# 8 KiB (whatever it costs here)
gets() { # gets MCA-ARGS...: "SINGLE DOUBLE" summed over both ranks, or "failed"
	local out
	out=$("${launch[@]}" --mca btl_base_verbose info "$@" "$build/tests/mpi/p2p" 2>&1 | tr -d '\000' || true)
	grep -q "^p2p: PASS" <<<"$out" || { echo failed; return; }
	both_ranks_gets "$out"
}
read -r nosc_single nosc_double < <(gets $(smx_config_args smx-nosc))
read -r pin_single pin_double < <(gets $(smx_config_args smx-single8k))
[ "$nosc_single" = 0 ] && [ "${nosc_double:-0}" -gt 0 ] 2>/dev/null &&
	[ "${pin_single:-0}" -gt 0 ] 2>/dev/null &&
	echo "ok: gets counted: without single copy $nosc_double by double copy, none single;" \
		"single copy pinned from 8 KiB with cma, $pin_single single" ||
	fail "get counters: smx-nosc '$nosc_single $nosc_double', smx-single8k '$pin_single $pin_double'"

# The measured choice: a receiver weighs each way a peer's messages may take by the
# time they took, tries the others now and then, and tells the sender (its word, at
# btl_base_verbose trace "<peer>'s messages to me: 4k:e,...,256k:d,..."). A 2-rank
# ping-pong of 256 KiB, with a single copy made far dearer than here
# (tests/bench/dear-cma.c: 20 us more per page, some 1.3 ms a message against tens of
# us by double copy): the receivers try single copy (a word says 256k:s) and, having
# measured it dear, go back (a later word says 256k:d): at least four gets by double
# copy for each by single copy. (Whether a try is under way as the job ends is chance:
# the policy at finalize is not judged.) With single copy pinned from 1 byte, the same
# dear single copy carries every get, no word ever says 256k:d, nothing changes, and
# both processes' policies say 256k:s to the end: the pin is not measured. (The late
# sender below shows a move the other way.)
cc -O2 -shared -fPIC -o "$build/tests/smx/dear-cma.so" "$SMX_TOP/tests/bench/dear-cma.c" -ldl
dear=(-x LD_PRELOAD="$build/tests/smx/dear-cma.so" -x SMX_DEAR_CMA_NS=20000)
# measured MCA-ARGS...: "SINGLE DOUBLE TRIED BACK CHANGES 256K-WAYS" (the gets over both
# ranks, the words that asked for 256k by single copy and by double copy, the changes of
# a peer's way counted at finalize, the distinct ways of the 256k range in each process's
# last policy), or "failed"
measured() {
	local out
	out=$("${launch[@]}" $(smx_config_args smx-cma) "${dear[@]}" --mca btl_base_verbose trace \
		"$@" "$bench" --mode pingpong --sizes 256K --samples 4 --target-mb 64 2>&1 | tr -d '\000' || true)
	grep -q "^pingpong,262144," <<<"$out" || { echo "failed: $out" >&2; echo failed; return; }
	echo "$(both_ranks_gets "$out")" \
		"$(grep -c "btl:smx: .*'s messages to me: .*256k:s" <<<"$out" || true)" \
		"$(grep -c "btl:smx: .*'s messages to me: .*256k:d" <<<"$out" || true)" \
		"$(sed -n "s/.* \([0-9]*\) changes of a peer's way as measured.*/\1/p" <<<"$out" |
			awk '{ n += $1 } END { print n + 0 }')" \
		"$(final_ways "$out" | grep -o '256k:[esd]' | sort -u | paste -sd/)"
}
read -r m_single m_double m_tried m_back _ _ < <(measured)
read -r p_single p_double _ p_back p_changes p_ways < <(measured --mca btl_smx_single_copy_min 1)
[ "${m_tried:-0}" -ge 1 ] 2>/dev/null && [ "${m_back:-0}" -ge 1 ] 2>/dev/null &&
	[ "${m_double:-0}" -gt 0 ] 2>/dev/null && [ "${m_single:-x}" -ge 0 ] 2>/dev/null &&
	[ $((4 * m_single)) -le "$m_double" ] &&
	[ "${p_single:-0}" -gt 0 ] 2>/dev/null && [ "$p_double" = 0 ] && [ "$p_back" = 0 ] &&
	[ "$p_changes" = 0 ] && [ "$p_ways" = "256k:s" ] &&
	echo "ok: a dear single copy, measured: tried ($m_tried words asking for it, $m_single" \
		"gets), then double copy again ($m_back words, $m_double gets); pinned from 1 byte:" \
		"$p_single gets by single copy, none by double, no change ($p_ways)" ||
	fail "measured choice, dear single copy (single double tried back): '$m_single $m_double" \
		"$m_tried $m_back' (want N, >= 4N, >= 1, >= 1); pinned from 1 byte (single double" \
		"256k:d-words changes ways) '$p_single $p_double $p_back $p_changes $p_ways' (want N 0 0 0 256k:s)"

# ... and a move the other way: a sender that computes outside MPI while its
# rendezvous waits (latesender: 20 sends of 64 KiB, 5 ms of computing each) cannot
# serve a double copy, which takes some 5 ms from its hand to the receiver's buffer;
# a single copy, which the receiver pulls alone, some tens of us. The receiver
# starts on double copy (a shared cache: the class's start) and tries single copy
# after its first messages: most of its gets go by single copy, after at least one
# change of its word. With the way pinned (btl_smx_single_copy_min never) every get
# goes by double copy and nothing changes. Both with the push ahead off. With it (the
# default), the sender copies each message as it sends it while the word says double
# copy: every get by double copy is a push taken, and whether single copy is measured
# cheaper then is the machine's (not judged). Skew off: a receiver descheduled as the
# barrier ends posts its receive after the message came, which the skew switch takes
# for late (the late receiver below tests that), and messages to it go eagerly. Bytes
# checked every way.
late() { # late MCA-ARGS...: "SINGLE DOUBLE CHANGES PUSHED", or "failed"
	local out
	out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_skew off "$@" \
		"$build/tests/smx/latesender" 20 65536 5000 2>&1 | tr -d '\000' || true)
	grep -q "^latesender: PASS" <<<"$out" || { echo "failed: $out" >&2; echo failed; return; }
	echo "$(sed -n 's/^latesender: rank 0: gets by single copy \([0-9-]*\), by double copy \([0-9-]*\), changes \([0-9-]*\);.*/\1 \2 \3/p' <<<"$out")" \
		"$(sed -n 's/^latesender: rank 1: pushed ahead \([0-9-]*\)$/\1/p' <<<"$out")"
}
read -r a_single a_double a_changes _ < <(late --mca btl_smx_push_max 0)
read -r f_single f_double f_changes _ < <(late --mca btl_smx_push_max 0 \
	--mca btl_smx_single_copy_min never)
read -r p_single p_double _ p_pushed < <(late)
[ "${a_single:-0}" -ge 15 ] 2>/dev/null && [ "${a_changes:-0}" -ge 1 ] 2>/dev/null &&
	[ "${f_single:-1}" = 0 ] && [ "${f_double:-0}" = 20 ] && [ "${f_changes:-1}" = 0 ] &&
	echo "ok: gets from a sender away computing go by single copy as measured ($a_single" \
		"of 20, after $a_changes change(s) of its word); pinned to double copy, 20 of 20 by" \
		"double copy, no change" ||
	fail "measured choice, late sender (single double changes): '$a_single $a_double" \
		"$a_changes' (want >= 15 single, >= 1 change); pinned never: '$f_single $f_double" \
		"$f_changes' (want 0 20 0)"
[ "${p_pushed:-0}" -ge 2 ] 2>/dev/null && [ "${p_double:-0}" = "$p_pushed" ] &&
	[ "$((p_single + p_double))" = 20 ] &&
	echo "ok: pushed ahead while the word says double copy: $p_pushed rendezvous pushed, each" \
		"taken by a double copy ($p_single by single copy as measured)" ||
	fail "push ahead (single double pushed): '$p_single $p_double $p_pushed' (want as many" \
		"double as pushed, >= 2, 20 in all)"
# A late receiver (btl_smx_skew.c): rank 1 computes 30 us before each of 8 windows of 32
# receives of 64 KiB, then waits in its receives (80 ping-pongs). It must find itself
# late and tell rank 0, whose messages then go eagerly (in several chunks: above a
# fragment), then catch up, after which none of the last 16 goes eagerly. With
# btl_smx_skew off no counter moves. Every byte checked (latereceiver asserts all that).
for mode in on off; do
	out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_skew $mode \
		"$build/tests/smx/latereceiver" $mode 8 32 65536 30 2>&1 | tr -d '\000' || true)
	if grep -q "^latereceiver: PASS" <<<"$out"; then
		echo "ok: a late receiver, skew $mode: $(grep '^latereceiver: rank' <<<"$out" | tr '\n' ' ')"
	else
		fail "a late receiver, skew $mode: $out"
	fi
done
exit $status
