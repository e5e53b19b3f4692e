#!/usr/bin/env bash
# btl/smx's parameters on the host: a wrong value is refused by name and the job runs
# without smx; every kind of value (a size with a suffix, auto, never) is taken, by class
# and generic; lines of parameters it no longer has break no job; processes started with
# different fragment sizes or pushes ahead work together; a smaller fragment alone brings
# the eager limits down. (The other btl/smx checks: tests/check-smx-*.sh.)
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SMX_TOP/tests/smx/lib.sh"

# Wrong values are named, and the job does not run on smx
# (with sm beside it, the job itself must run: on sm, without smx, which at verbosity 1
# would announce its local processes)
check_param() {
	local what=$1 want=$2
	shift 2
	out=$("${launch[@]}" --mca btl smx,sm,self --mca btl_base_verbose info "$@" \
		"$build/tests/mpi/anysource" 2>&1 | tr -d '\000' || true)
	# (btl/smx's own message says "Parameter:", the MCA system's for a value that is
	# not even of the parameter's kind "Variable :")
	if ! grep -Eq "^ *(Parameter|Variable) *: $want\$" <<<"$out"; then
		fail "$what: no message naming $want: $out"
	elif grep -q "btl:smx: [0-9]* local processes" <<<"$out"; then
		fail "$what: refused, yet btl/smx went on: $out"
	elif ! grep -q "^anysource: PASS" <<<"$out"; then
		fail "$what: the job did not run on the other transports: $out"
	else
		echo "ok: $what is refused by name, the job runs without smx"
	fi
}
check_param "a pair ring of 2 KiB" btl_smx_pair_ring_size --mca btl_smx_pair_ring_size 2048
check_param "a pair ring of 24 KiB (not a power of two)" btl_smx_pair_ring_size \
	--mca btl_smx_pair_ring_size 24576
check_param "a negative number of pair rings" btl_smx_pair_rings_max \
	--mca btl_smx_pair_rings_max -1
check_param "an eager limit above the fragment size" btl_smx_eager_limit \
	--mca btl_smx_eager_limit 40000
check_param "a fragment size below 1 KiB" btl_smx_frag_size --mca btl_smx_frag_size 100
check_param "a class's single-copy threshold that is neither a size, auto nor never" \
	btl_smx_single_copy_min_l3 --mca btl_smx_single_copy_min_l3 sometimes
check_param "a negative single-copy threshold of a class" btl_smx_single_copy_min_l3 \
	--mca btl_smx_single_copy_min_l3 -4096
check_param "a generic single-copy threshold that is neither a size, auto nor never" \
	btl_smx_single_copy_min --mca btl_smx_single_copy_min always
check_param "a class's eager limit 'never' (auto or a size)" btl_smx_eager_limit_l3 \
	--mca btl_smx_eager_limit_l3 never
check_param "a class's eager limit above the fragment size" btl_smx_eager_limit_l3 \
	--mca btl_smx_eager_limit_l3 40000
check_param "an eager limit set above a smaller fragment" btl_smx_eager_limit \
	--mca btl_smx_frag_size 4096 --mca btl_smx_eager_limit 8192
check_param "a budget of 4 MiB for fragments of 1 MiB (room for less than five)" \
	btl_smx_budget_kb --mca btl_smx_budget_kb 4096 --mca btl_smx_frag_size 1048576
check_param "a fragment cap below 8" btl_smx_max_frags --mca btl_smx_max_frags 4
check_param "non-temporal stores 'sometimes'" btl_smx_nontemporal --mca btl_smx_nontemporal sometimes
check_param "a budget of 272 KiB (five default fragments need 273)" btl_smx_budget_kb \
	--mca btl_smx_budget_kb 272
check_param "a negative budget" btl_smx_budget_kb --mca btl_smx_budget_kb -5
check_param "a class's eager limit below ob1's largest header (ob1 fails MPI_Init below 80)" \
	btl_smx_eager_limit_l3 --mca btl_smx_eager_limit_l3 72
# ... while the smallest eager limits accepted work: every class at 128
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_eager_limit 128 \
	--mca btl_base_verbose info "$build/tests/mpi/p2p" 2>&1 | tr -d '\000' || true)
grep -q "^p2p: PASS" <<<"$out" && grep -q "btl:smx: 2 local processes" <<<"$out" &&
	echo "ok: eager limits of 128 bytes, the smallest accepted, carry p2p on smx" ||
	fail "eager limits of 128: want p2p PASS on smx: $out"
# ... and every kind of value is taken, the generic ones for every class not set by name,
# as the policy says (a pin: its number, or never; auto: measured): a size with a
# suffix, auto, never
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_eager_limit 8192 \
	--mca btl_smx_eager_limit_l3 auto --mca btl_smx_single_copy_min 4k \
	--mca btl_smx_single_copy_min_l3 never --mca btl_smx_single_copy_min_l2 auto \
	--mca btl_base_verbose info "$build/tests/mpi/p2p" 2>&1 | tr -d '\000' || true)
# class_pins OUT: the distinct <class>.eager_limit= and <class>.single_copy_min= words of
# the policy lines
class_pins() {
	sed -n 's/.*btl:smx: policy: //p' <<<"$1" | tr ' ' '\n' |
		grep -E '^[a-z0-9]+\.(eager_limit|single_copy_min)=' | sort -u | paste -sd' '
}
pins_named=$(class_pins "$out")
grep -q "^p2p: PASS" <<<"$out" &&
	[ "$pins_named" = "l2.eager_limit=8192 l2.single_copy_min=auto l3.eager_limit=auto l3.single_copy_min=never" ] &&
	echo "ok: auto, never and a size with a suffix are taken; a class set by name keeps its" \
		"own, the generic values go to the others: $pins_named" ||
	fail "values by name and generic: want l2.eager_limit=8192 l2.single_copy_min=auto" \
		"l3.eager_limit=auto l3.single_copy_min=never and p2p PASS, not '$pins_named': $out"
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_single_copy_min 4k \
	--mca btl_base_verbose info "$build/tests/mpi/anysource" 2>&1 | tr -d '\000' || true)
pins_named=$(class_pins "$out")
grep -q "^anysource: PASS" <<<"$out" && [ -n "$pins_named" ] &&
	[ "$(tr ' ' '\n' <<<"$pins_named" | sed 's/^[a-z0-9]*\.//' | sort -u | paste -sd' ')" = \
		"eager_limit=auto single_copy_min=4096" ] &&
	echo "ok: the generic threshold 4k alone pins every class at 4096, eager limits measured: $pins_named" ||
	fail "btl_smx_single_copy_min 4k alone: want every class's single_copy_min=4096 and eager_limit=auto: '$pins_named': $out"
# ... and a stale line of a parameter btl/smx no longer has (the calibration file, the
# busy rules: c10d8d0) in an Open MPI parameter file breaks no job: it runs on smx, data
# intact, and btl/smx says nothing of it
stale=$(mktemp)
printf '%s\n' "btl_smx_calibration_file=auto" "btl_smx_single_copy_cost=220" \
	"btl_smx_busy_ranks=4" "btl_smx_single_copy_window_max=off" >"$stale"
out=$(OMPI_MCA_mca_base_param_files="$stale" "${launch[@]}" -x OMPI_MCA_mca_base_param_files \
	$(smx_config_args smx-cma) --mca btl_base_verbose info "$build/tests/mpi/p2p" 2>&1 |
	tr -d '\000' || true)
grep -q "^p2p: PASS" <<<"$out" && [ "$(grep -c "btl:smx: 2 local processes" <<<"$out")" = 2 ] &&
	! grep -q "btl:smx: not used" <<<"$out" &&
	echo "ok: a parameter file with lines of parameters btl/smx no longer has: the job runs on" \
		"smx, data intact" ||
	fail "stale parameter lines in $stale: want p2p PASS on smx: $out"
rm -f "$stale"
# ... and processes started with different fragment sizes (one app context of an MPMD
# job) work together: a receiver takes each message's size from the message
out=$("${launch[@]}" --mca btl smx,self --mca btl_smx_eager_limit 4096 --mca btl_base_verbose trace \
	sh -c '[ "$OMPI_COMM_WORLD_RANK" = 0 ] && export OMPI_MCA_btl_smx_frag_size=4096; exec "$0"' \
	"$build/tests/mpi/p2p" 2>&1 | tr -d '\000' || true)
grep -q "^p2p: PASS" <<<"$out" && [ "$(grep -c "btl:smx: peer " <<<"$out")" = 2 ] &&
	echo "ok: processes with different fragment sizes exchange data intact" ||
	fail "frag_size 4096 on rank 0 only: want p2p PASS over smx: $out"
# ... and so do processes of which one pushes its rendezvous ahead and one does not (each
# reads the other's registration handles at its own size)
for cfg in smx-cma smx-nosc; do
	out=$("${launch[@]}" $(smx_config_args "$cfg") --mca btl_base_verbose info \
		sh -c '[ "$OMPI_COMM_WORLD_RANK" = 0 ] && export OMPI_MCA_btl_smx_push_max=0; exec "$0"' \
		"$build/tests/mpi/p2p" 2>&1 | tr -d '\000' || true)
	pushed=$(sed -n 's/.* \([0-9]*\) pushed ahead (.*/\1/p' <<<"$out" | sort -n | tr '\n' ' ')
	grep -q "^p2p: PASS" <<<"$out" && [[ "$pushed" =~ ^0\ [1-9][0-9]*\ $ ]] &&
		echo "ok: $cfg: a process pushing ahead and one not exchange data intact (pushed: $pushed)" ||
		fail "$cfg, btl_smx_push_max 0 on rank 0 only: want p2p PASS, rank 1 alone pushing: '$pushed': $out"
done
# ... while a smaller fragment alone is enough: the defaults above it follow it down. No
#     message of 4 KiB or more then goes eagerly (a range goes eagerly only below a
#     fragment): every range of each peer's ways is a copy, as it starts and as it ends
#     (the policy printed at add_procs and again at finalize where a way changed); by
#     default the ranges below a fragment (4k to 32k) start eagerly for this shared-cache
#     pair
# peer_ways OUT: each "peerN.ways=..." word of the policy lines, one per line
peer_ways() { sed -n 's/.*btl:smx: policy: //p' <<<"$1" | tr ' ' '\n' | grep -E '^peer[0-9]+\.ways='; }
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_frag_size 4096 \
	--mca btl_base_verbose info "$build/tests/mpi/p2p" 2>&1 | tr -d '\000' || true)
small_ways=$(peer_ways "$out")
dflt=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_base_verbose info \
	"$build/tests/mpi/anysource" 2>&1 | tr -d '\000' || true)
dflt_first=$(peer_ways "$dflt" | head -2 | sed 's/^peer[0-9]*\.ways=//' | cut -d, -f1-5 | sort -u)
grep -q "^p2p: PASS" <<<"$out" && [ "$(wc -l <<<"$small_ways")" -ge 2 ] &&
	! grep -q ':e' <<<"$small_ways" && [ "$dflt_first" = "4k:e,8k:e,16k:e,32k:e,64k:d" ] &&
	echo "ok: btl_smx_frag_size 4096 alone: no range eager, data intact; by default 4k to" \
		"32k start eagerly" ||
	fail "frag_size 4096 alone: want p2p PASS and no range of any peer's ways eager" \
		"('$small_ways'), by default '4k:e,8k:e,16k:e,32k:e,64k:d' first ('$dflt_first'): $out"
exit $status
