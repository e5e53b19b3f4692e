#!/usr/bin/env bash
# btl/smx housekeeping on the host: its shared-memory files are gone after a normal run,
# once every peer has mapped them, and after kill -9 of a rank; a wrong parameter is
# refused by name; pins of a class's eager limit and single-copy threshold take their
# path, and otherwise the way each peer's messages take moves as the receiver measures it;
# under threads a send held back completes once its receiver took it.
# (Data correctness: the MPI suite in check-mpi-host.sh, which runs smx configurations.)
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$SMX_TOP/build}
. "$SMX_TOP/tests/configurations.sh"
"$SMX_TOP/tests/mpi/run-suite" --build-only
mkdir -p "$build/tests/smx"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/linger" "$SMX_TOP/tests/smx/linger.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/burst" "$SMX_TOP/tests/smx/burst.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/dump" "$SMX_TOP/tests/smx/dump.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/ringpages" "$SMX_TOP/tests/smx/ringpages.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/latesender" "$SMX_TOP/tests/smx/latesender.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/latereceiver" "$SMX_TOP/tests/smx/latereceiver.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/truncate" "$SMX_TOP/tests/smx/truncate.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/takenfirst" "$SMX_TOP/tests/smx/takenfirst.c"
launch=(mpirun -np 2)
launch+=($(smx_root_args))
# policy OUT KEY: the values of KEY (a pattern: 'pieces_in_flight', '[a-z0-9]*\.eager_limit')
# in the policy lines btl/smx printed at btl_base_verbose info, one per line
policy() { sed -n 's/.*btl:smx: policy: //p' <<<"$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# Our files of this test's jobs only: others may run beside us.
files_of() { ls /dev/shm 2>/dev/null | grep -E "^smx\.[0-9a-f]+\.[0-9]+\.($1)$" || true; }
# Pids of the ranks that said "btl:smx: 2 local processes" (opal prints them 0-padded).
smx_pids() {
	sed -n 's/.*\[[^]]*:\([0-9]*\)\] btl:smx: 2 local processes.*/\1/p' |
		sed 's/^0*//' | paste -sd'|'
}

# 1. normal run
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_base_verbose info \
	"$build/tests/mpi/anysource" 2>&1 | tr -d '\000')
pids=$(smx_pids <<<"$out")
grep -q "^anysource: PASS" <<<"$out" || fail "the job on smx failed: $out"
[ -n "$pids" ] || fail "btl/smx was not used (no verbose line)"
[ -z "$pids" ] || [ -z "$(files_of "$pids")" ] || fail "files left after a normal run: $(files_of "$pids")"
[ $status = 0 ] && echo "ok: nothing left in /dev/shm after a normal run"

# 2. once every peer has mapped a segment, its file is unlinked (the memory lives on in
#    the mappings), so kill -9 of a rank cannot leave anything behind; the job aborts
log=$(mktemp)
"${launch[@]}" $(smx_config_args smx-nosc) --mca btl_base_verbose info "$build/tests/smx/linger" \
	>"$log" 2>&1 &
job=$!
for _ in $(seq 1 60); do
	[ "$(grep -c '^READY' "$log")" = 2 ] && break
	sleep 0.5
done
pids=$(smx_pids <"$log")
if [ -z "$pids" ] || [ "$(grep -c '^READY' "$log")" != 2 ]; then
	fail "the lingering job did not start on smx: $(cat "$log")"
	kill "$job" 2>/dev/null || true
else
	[ -z "$(files_of "$pids")" ] && echo "ok: segment files unlinked once every peer mapped them" ||
		fail "files still in /dev/shm after wire-up: $(files_of "$pids")"
	kill -9 "${pids%%|*}"
	rc=0
	wait "$job" || rc=$?
	[ $rc != 0 ] && echo "ok: the job ended with an error after kill -9 of a rank" ||
		fail "mpirun reported success after kill -9 of a rank"
	sleep 1
	[ -z "$(files_of "$pids")" ] && echo "ok: nothing left in /dev/shm after kill -9 of a rank" ||
		fail "files left after kill -9: $(files_of "$pids")"
fi
rm -f "$log"

# 2b. btl_smx_backing_directory: the segments' files go there (and are gone after the
#     run); a directory that does not exist keeps smx out, saying why, and the job runs
#     on sm
bdir=$(mktemp -d)
trace=$(mktemp -d)
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_backing_directory "$bdir" \
	--mca btl_base_verbose info strace -ff -qq -e trace=openat -o "$trace/t" \
	"$build/tests/mpi/anysource" 2>&1 | tr -d '\000')
made=$(cat "$trace"/t* | grep -c "openat(.*\"$bdir/smx\.[0-9a-f]*\.[0-9]*\.[0-9]*\", O_RDWR|O_CREAT" || true)
grep -q "^anysource: PASS" <<<"$out" && grep -q "btl:smx: 2 local processes" <<<"$out" &&
	[ "$made" = 2 ] && [ -z "$(ls -A "$bdir")" ] &&
	echo "ok: btl_smx_backing_directory $bdir holds both segments' files, empty after the run" ||
	fail "backing directory $bdir: want smx used, 2 files made there ($made) and gone: $(ls -A "$bdir") $out"
rm -rf "$bdir" "$trace"
out=$("${launch[@]}" --mca btl smx,sm,self --mca btl_smx_backing_directory /nonexistent/smx \
	--mca btl_base_verbose info "$build/tests/mpi/anysource" 2>&1 | tr -d '\000')
grep -q "^anysource: PASS" <<<"$out" && ! grep -q "btl:smx: 2 local processes" <<<"$out" &&
	grep -q "btl:smx: cannot create a segment of [0-9]* bytes as /nonexistent/smx/smx\." <<<"$out" &&
	echo "ok: a backing directory that does not exist keeps smx out, by name; the job runs on sm" ||
	fail "backing directory /nonexistent/smx: want smx refused by name and the job on sm: $out"

# 2c. btl_smx_pair_ring_size auto: a process's first 4 rings 512 KiB, later ones
#     128 KiB (said only where it may make more than 4: a ring a peer, at most
#     btl_smx_pair_rings_max); a size the user sets, for every ring
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

# 3. wrong values are named, and the job does not run on smx
# (with sm beside it, the job itself must run: on sm, without smx, which at verbosity 1
# would announce its local processes)
check_param() {
	local what=$1 want=$2
	shift 2
	out=$("${launch[@]}" --mca btl smx,sm,self --mca btl_base_verbose info "$@" \
		"$build/tests/mpi/anysource" 2>&1 | tr -d '\000')
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
	--mca btl_base_verbose info "$build/tests/mpi/p2p" 2>&1 | tr -d '\000')
grep -q "^p2p: PASS" <<<"$out" && grep -q "btl:smx: 2 local processes" <<<"$out" &&
	echo "ok: eager limits of 128 bytes, the smallest accepted, carry p2p on smx" ||
	fail "eager limits of 128: want p2p PASS on smx: $out"
# ... and every kind of value is taken, the generic ones for every class not set by name,
# as the policy says (a pin: its number, or never; auto: measured): a size with a
# suffix, auto, never
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_eager_limit 8192 \
	--mca btl_smx_eager_limit_l3 auto --mca btl_smx_single_copy_min 4k \
	--mca btl_smx_single_copy_min_l3 never --mca btl_smx_single_copy_min_l2 auto \
	--mca btl_base_verbose info "$build/tests/mpi/p2p" 2>&1 | tr -d '\000')
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
	--mca btl_base_verbose info "$build/tests/mpi/anysource" 2>&1 | tr -d '\000')
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
	tr -d '\000')
grep -q "^p2p: PASS" <<<"$out" && [ "$(grep -c "btl:smx: 2 local processes" <<<"$out")" = 2 ] &&
	! grep -q "btl:smx: not used" <<<"$out" &&
	echo "ok: a parameter file with lines of parameters btl/smx no longer has: the job runs on" \
		"smx, data intact" ||
	fail "stale parameter lines in $stale: want p2p PASS on smx: $out"
rm -f "$stale"
# ob1's dump of a communicator asks btl/smx about each peer (it crashed without btl_dump)
out=$("${launch[@]}" $(smx_config_args smx-cma) "$build/tests/smx/dump" 2>&1 | tr -d '\000')
grep -q "^dump: returned 0" <<<"$out" &&
	grep -Eq "btl:smx: .* -> local rank 1 \(class [a-z0-9]+\): [0-9]+ messages through its queue, .*descriptors out" <<<"$out" &&
	echo "ok: ob1's dump describes the smx endpoint" ||
	fail "mca_pml_ob1_dump on smx: want the endpoint line and a normal return: $out"
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
# final_ways OUT: the peers' ways in each process's last policy line (a process prints its
# policy at add_procs, and at finalize where it changed), one process a line
final_ways() {
	sed -n 's/^\(\[[^]]*\]\) btl:smx: policy: /\1 /p' <<<"$1" |
		awk '{ w = ""; for (i = 2; i <= NF; i++) if ($i ~ /^peer[0-9]+\.ways=/) w = w " " $i
			last[$1] = w } END { for (p in last) print substr(last[p], 2) }'
}
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_frag_size 4096 \
	--mca btl_base_verbose info "$build/tests/mpi/p2p" 2>&1 | tr -d '\000')
small_ways=$(peer_ways "$out")
dflt=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_base_verbose info \
	"$build/tests/mpi/anysource" 2>&1 | tr -d '\000')
dflt_first=$(peer_ways "$dflt" | head -2 | sed 's/^peer[0-9]*\.ways=//' | cut -d, -f1-5 | sort -u)
grep -q "^p2p: PASS" <<<"$out" && [ "$(wc -l <<<"$small_ways")" -ge 2 ] &&
	! grep -q ':e' <<<"$small_ways" && [ "$dflt_first" = "4k:e,8k:e,16k:e,32k:e,64k:d" ] &&
	echo "ok: btl_smx_frag_size 4096 alone: no range eager, data intact; by default 4k to" \
		"32k start eagerly" ||
	fail "frag_size 4096 alone: want p2p PASS and no range of any peer's ways eager" \
		"('$small_ways'), by default '4k:e,8k:e,16k:e,32k:e,64k:d' first ('$dflt_first'): $out"

# 4. pins: a class's single-copy threshold set by a parameter is the way of every
#    rendezvous, whatever single copy costs here (nothing is measured there). An all-to-all
#    of 64 KiB (the benchmark checks each message's first and last byte; the MPI suite's
#    configurations smx-single and smx-double every byte): single copy from 1 byte, eager
#    limit 128: every get by single copy (process_vm_readv, smsc/cma's copy_from, counted
#    with strace), none by double copy, every range of each peer's ways 's'; never, with
#    cma there: every get by double copy, no process_vm_readv, no range 's'
bench=$build/tests/smx/smx_bench
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$bench" "$SMX_TOP/tests/bench/smx_bench.c" \
	"$SMX_TOP/tests/bench/bench_util.c"
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

# 5. a sender writes to a peer through the peer's queue until it has sent it
#    btl_smx_pair_ring_after messages, then through a ring of its own (at most
#    btl_smx_pair_rings_max of them): the MPI_T counter says how many, data intact either way
rings() { # rings MCA-ARGS...: each of the 4 processes' count of pair rings, or "failed"
	local out four=(mpirun -np 4 --oversubscribe)
	four+=($(smx_root_args))
	out=$("${four[@]}" --mca btl smx,self "$@" "$bench" --mode alltoall --sizes 64 \
		--samples 1 --target-mb 1 --print-pvar btl_smx_pair_rings 2>&1 | tr -d '\000')
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
	--sizes 64 --samples 1 --target-mb 1 2>&1 | tr -d '\000')
large=$(grep -c "btl:smx: .*: a ring of 512 KiB to " <<<"$out" || true)
small=$(grep -c "btl:smx: .*: a ring of 128 KiB to " <<<"$out" || true)
grep -q "^alltoall,64," <<<"$out" && [ "$large" = 24 ] && [ "$small" = 6 ] &&
	echo "ok: 6 processes in an all-to-all make rings of 512 KiB to 4 peers each, 128 KiB" \
		"to the fifth" ||
	fail "ring sizes: want 24 rings of 512 KiB and 6 of 128 KiB, got $large and $small: $out"

# 6. a burst of 10000 sends of 16 KiB to a receiver that is not receiving yet: what the
#    sender's rings cannot take waits in at most btl_smx_max_frags fragments (512 x 34 KiB),
#    the rest in ob1's own queue, and every byte arrives in order. Without the cap the
#    sender held about 200 MB here; the same run with a cap out of reach shows that the
#    cap, not luck, bounds it.
#    Its counters (btl_base_verbose info at finalize, the MPI_T variables' values) say so too.
burst_log=$(mktemp)
burst() { # burst MCA-ARGS...: the sender's peak memory growth in kB, or "failed"; the
	# job's output in $burst_log
	# (16 KiB sent eagerly whatever the class: far classes' default limit is 4 KiB)
	"${launch[@]}" --mca btl smx,self --mca btl_base_verbose info --mca btl_smx_eager_limit 20480 \
		"$@" "$build/tests/smx/burst" 10000 16384 2>&1 | tr -d '\000' >"$burst_log"
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

# 7. the counters of the two kinds of get in the MPI suite's p2p (every byte checked): none
#    by single copy without an SMSC component, some with cma and single copy pinned from
#    8 KiB (whatever it costs here)
gets() { # gets MCA-ARGS...: "SINGLE DOUBLE" summed over both ranks, or "failed"
	local out
	out=$("${launch[@]}" --mca btl_base_verbose info "$@" "$build/tests/mpi/p2p" 2>&1 | tr -d '\000')
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

# 8. the measured choice: a receiver weighs each way a peer's messages may take by the
#     time they took, tries the others now and then, and tells the sender (its word, at
#     btl_base_verbose trace "<peer>'s messages to me: 4k:e,...,256k:d,..."). A 2-rank
#     ping-pong of 256 KiB, with a single copy made far dearer than here
#     (tests/bench/dear-cma.c: 20 us more per page, some 1.3 ms a message against tens of
#     us by double copy): the receivers try single copy (a word says 256k:s) and, having
#     measured it dear, go back (a later word says 256k:d): at least four gets by double
#     copy for each by single copy. (Whether a try is under way as the job ends is chance:
#     the policy at finalize is not judged.) With single copy pinned from 1 byte, the same
#     dear single copy carries every get, no word ever says 256k:d, nothing changes, and
#     both processes' policies say 256k:s to the end: the pin is not measured. (9 shows a
#     move the other way.)
cc -O2 -shared -fPIC -o "$build/tests/smx/dear-cma.so" "$SMX_TOP/tests/bench/dear-cma.c" -ldl
dear=(-x LD_PRELOAD="$build/tests/smx/dear-cma.so" -x SMX_DEAR_CMA_NS=20000)
# measured MCA-ARGS...: "SINGLE DOUBLE TRIED BACK CHANGES 256K-WAYS" (the gets over both
# ranks, the words that asked for 256k by single copy and by double copy, the changes of
# a peer's way counted at finalize, the distinct ways of the 256k range in each process's
# last policy), or "failed"
measured() {
	local out
	out=$("${launch[@]}" $(smx_config_args smx-cma) "${dear[@]}" --mca btl_base_verbose trace \
		"$@" "$bench" --mode pingpong --sizes 256K --samples 4 --target-mb 64 2>&1 | tr -d '\000')
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

# 9. ... and a move the other way: a sender that computes outside MPI while its
#     rendezvous waits (latesender: 20 sends of 64 KiB, 5 ms of computing each) cannot
#     serve a double copy, which takes some 5 ms from its hand to the receiver's buffer;
#     a single copy, which the receiver pulls alone, some tens of us. The receiver
#     starts on double copy (a shared cache: the class's start) and tries single copy
#     after its first messages: most of its gets go by single copy, after at least one
#     change of its word. With the way pinned (btl_smx_single_copy_min never) every get
#     goes by double copy and nothing changes. Both with the push ahead off. With it (the
#     default), the sender copies each message as it sends it while the word says double
#     copy: every get by double copy is a push taken, and whether single copy is measured
#     cheaper then is the machine's (not judged). Skew off: a receiver descheduled as the
#     barrier ends posts its receive after the message came, which the skew switch takes
#     for late (12 tests that), and messages to it go eagerly. Bytes checked every way.
late() { # late MCA-ARGS...: "SINGLE DOUBLE CHANGES PUSHED", or "failed"
	local out
	out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_skew off "$@" \
		"$build/tests/smx/latesender" 20 65536 5000 2>&1 | tr -d '\000')
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
# 10. a new pair ring's pages are all written when it is made, and a segment's chunk area
#     when the segment is (tmpfs gives a page at its first write; a fault in the middle
#     of later traffic costs whoever meets it, and makes its first transfers look dear
#     to the measured choice): after 64 small messages, which keep to a ring's first 32
#     KiB, the sender has its whole ring in memory: at least 512 KiB more than where it
#     makes no ring by default, 4 MiB more with rings of 4 MiB; and where it makes no
#     ring, at least its whole chunk area (btl_smx_budget_kb 4096 here: 4 MiB) but not
#     512 KiB more (no ring area written)
ring_rss() { # ring_rss MCA-ARGS...: rank 0's resident kB of its own segment, or "failed"
	local out
	out=$("${launch[@]}" $(smx_config_args smx-cma) "$@" "$build/tests/smx/ringpages" 2>&1 |
		tr -d '\000')
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
# 11. the footprint of large messages (btl_smx_policy.c, smx_footprint): on a crowded node
#     (more processes than hardware threads) a peer's pieces in flight fill a quarter of
#     the L2 (4 to 32) and whole-fragment chunks come round after half of it; two ranks,
#     32 pieces and a cycle of twice the L2 (at least 1 MiB)
# (hwloc's count, as btl/smx sees it: the allowed cpuset, which may differ from nproc's)
threads=$(hwloc-calc -N pu all 2>/dev/null || nproc)
over=$((threads + 1))
crowd=$(mpirun -np "$over" --oversubscribe --bind-to none $(smx_root_args) \
	$(smx_config_args smx-cma) --mca btl_base_verbose info "$build/tests/mpi/anysource" 2>&1 |
	tr -d '\000')
two=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_base_verbose info \
	"$build/tests/mpi/anysource" 2>&1 | tr -d '\000')
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
# 12. a late receiver (btl_smx_skew.c): rank 1 computes 30 us before each of 8 windows of 32
#     receives of 64 KiB, then waits in its receives (80 ping-pongs). It must find itself
#     late and tell rank 0, whose messages then go eagerly (in several chunks: above a
#     fragment), then catch up, after which none of the last 16 goes eagerly. With
#     btl_smx_skew off no counter moves. Every byte checked (latereceiver asserts all that).
for mode in on off; do
	out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_skew $mode \
		"$build/tests/smx/latereceiver" $mode 8 32 65536 30 2>&1 | tr -d '\000')
	if grep -q "^latereceiver: PASS" <<<"$out"; then
		echo "ok: a late receiver, skew $mode: $(grep '^latereceiver: rank' <<<"$out" | tr '\n' ' ')"
	else
		fail "a late receiver, skew $mode: $out"
	fi
done
# 13. a message larger than its receive fails it with MPI_ERR_TRUNCATE, posted or not, its
#     first bytes received: eager in one chunk (20000 into 10000), by rendezvous (100 KiB
#     into 64 KiB), and eager in several chunks (100 KiB with every receiver late: ob1
#     must see one segment, or it misses the truncation of a posted receive).
for t in "smx-cma 20000 10000" "smx-cma 102400 65536" "smx-skew-always 102400 65536"; do
	read -r cfg len rlen <<<"$t"
	out=$("${launch[@]}" $(smx_config_args "$cfg") "$build/tests/smx/truncate" "$len" "$rlen" \
		2>&1 | tr -d '\000')
	if grep -q "^truncate: PASS" <<<"$out"; then
		echo "ok: $len bytes into a receive of $rlen on $cfg: MPI_ERR_TRUNCATE, posted or not"
	else
		fail "$len bytes into a receive of $rlen on $cfg: $out"
	fi
done
# 14. under MPI_THREAD_MULTIPLE a send held back by a full ring completes only once its
#     receiver has taken it, not once written (takenfirst.c: the receiver makes exactly
#     one progress call between; every byte checked). Before the rule (issue 59) it failed.
out=$("${launch[@]}" $(smx_config_args smx-cma) "$build/tests/smx/takenfirst" 2>&1 | tr -d '\000')
if grep -q "^takenfirst: PASS" <<<"$out"; then
	echo "ok: under threads a send held back completes once its receiver took it"
else
	fail "a send held back, under threads: $out"
fi
exit $status
