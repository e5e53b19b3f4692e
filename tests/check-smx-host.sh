#!/usr/bin/env bash
# btl/smx housekeeping on the host: its shared-memory files are gone after a normal run,
# once every peer has mapped them, and after kill -9 of a rank; a wrong parameter is
# refused by name; a crowded or oversubscribed node and an exchange change the protocol.
# (Data correctness: the MPI suite in check-mpi-host.sh, which runs smx configurations.)
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$top/build}
. "$top/tests/configurations.sh"
"$top/tests/mpi/run-suite" --build-only
mkdir -p "$build/tests/smx"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/linger" "$top/tests/smx/linger.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/burst" "$top/tests/smx/burst.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/dump" "$top/tests/smx/dump.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/ringpages" "$top/tests/smx/ringpages.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/latesender" "$top/tests/smx/latesender.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/latereceiver" "$top/tests/smx/latereceiver.c"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/truncate" "$top/tests/smx/truncate.c"
launch=(mpirun -np 2)
launch+=($(smx_root_args))
# policy OUT KEY: the values of KEY (a pattern: 'busy_always', '[a-z0-9]*\.eager_limit')
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
check_param "a busy eager limit below an ob1 header" btl_smx_eager_limit_busy \
	--mca btl_smx_eager_limit_busy 10
check_param "a negative busy process count" btl_smx_busy_ranks --mca btl_smx_busy_ranks -2
check_param "a negative single-copy cost" btl_smx_single_copy_cost_max \
	--mca btl_smx_single_copy_cost_max -1
check_param "a window cost that is not a number" btl_smx_single_copy_window_cost_max \
	--mca btl_smx_single_copy_window_cost_max nan
check_param "a negative single-copy window" btl_smx_single_copy_window_max \
	--mca btl_smx_single_copy_window_max -1
check_param "a window eager limit above the fragment size" btl_smx_eager_limit_window \
	--mca btl_smx_eager_limit_window 40000
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
# ... while the smallest eager limits accepted work: every class and the busy rule at 128
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_eager_limit 128 \
	--mca btl_smx_busy_ranks 0 --mca btl_smx_eager_limit_busy 128 --mca btl_base_verbose info \
	"$build/tests/mpi/p2p" 2>&1 | tr -d '\000')
grep -q "^p2p: PASS" <<<"$out" && grep -q "btl:smx: 2 local processes" <<<"$out" &&
	echo "ok: eager limits of 128 bytes, the smallest accepted, carry p2p on smx" ||
	fail "eager limits of 128: want p2p PASS on smx: $out"
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
# ... while a smaller fragment alone is enough: the defaults above it follow it down
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_frag_size 4096 \
	--mca btl_base_verbose trace "$build/tests/mpi/p2p" 2>&1 | tr -d '\000')
n=$(grep -c "btl:smx: policy: " <<<"$out" || true)
big=$(policy "$out" '[a-z0-9]*\.\(rndv_\)\?eager_limit' | awk '$1 > 4096' | wc -l)
grep -q "^p2p: PASS" <<<"$out" && [ "$n" = 2 ] && [ "$big" = 0 ] &&
	echo "ok: btl_smx_frag_size 4096 alone lowers the limits' defaults to fit, data intact" ||
	fail "frag_size 4096 alone: want p2p PASS and 2 peers with limits <= 4096: $out"

# 4. a node with more processes than btl_smx_busy_ranks is busy from the start: every
#    class gets the busy eager limit and single-copy threshold (its policy says so) where
#    single copy counts as cheap (btl_smx_single_copy_cost_max always); where it does
#    not (a limit of 0), the class's own threshold (never, for these 2 cores) stays
busy_args=(--mca btl_base_verbose info --mca btl_smx_busy_ranks 1 --mca btl_smx_eager_limit_busy 6000
	--mca btl_smx_single_copy_min_busy 7000)
out=$("${launch[@]}" $(smx_config_args smx-cma) "${busy_args[@]}" \
	--mca btl_smx_single_copy_cost_max never "$build/tests/mpi/p2p" 2>&1 | tr -d '\000')
# busy_policy OUT: "BUSY EAGER BUSY-THRESHOLD", each the distinct values over both
# processes and every class (joined by /)
busy_policy() {
	echo "$(policy "$1" busy_always | paste -sd/)" \
		"$(policy "$1" '[a-z0-9]*\.eager_limit' | sort -u | paste -sd/)" \
		"$(policy "$1" '[a-z0-9]*\.single_copy_min_busy' | sort -u | paste -sd/)"
}
n=$(busy_policy "$out")
grep -q "^p2p: PASS" <<<"$out" && [ "$n" = "1/1 6000 never" ] &&
	echo "ok: where single copy is too dear, a crowded node keeps the class's threshold" ||
	fail "busy_ranks, cost limit 0: want 'busy, eager limit, busy threshold' 1/1 6000 never, not '$n', and p2p PASS: $out"
out=$("${launch[@]}" $(smx_config_args smx-cma) "${busy_args[@]}" \
	--mca btl_smx_single_copy_cost_max always "$build/tests/mpi/p2p" 2>&1 | tr -d '\000')
n=$(busy_policy "$out")
grep -q "^p2p: PASS" <<<"$out" && [ "$n" = "1/1 6000 7000" ] &&
	echo "ok: a crowded node lowers both thresholds for every peer, data intact" ||
	fail "busy_ranks: want 'busy, eager limit, busy threshold' 1/1 6000 7000, not '$n', and p2p PASS: $out"
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_base_verbose info \
	"$build/tests/mpi/anysource" 2>&1 | tr -d '\000')
[ "$(policy "$out" busy_always | paste -sd/)" = 0/0 ] &&
	echo "ok: 2 processes are not a busy node by default" ||
	fail "2 processes counted as a busy node (or no policy printed): $out"
# 5. an exchange (a 2-rank alltoall of 1 MiB: each rank pulls from the other by double copy)
#    is served by one single copy (process_vm_writev, smsc/cma's copy_to) into the peer
#    when single copy counts as cheap (btl_smx_single_copy_cost_max always), not at
#    all with btl_smx_exchange_push false or a cost limit of 0, and by default as each
#    process's measured cost decides (btl_base_verbose info says which); the benchmark checks
#    each message's first and last byte, the collectives of the MPI suite (smx-cma-push)
#    every byte of this path
bench=$build/tests/smx/smx_bench
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$bench" "$top/tests/bench/smx_bench.c" \
	"$top/tests/bench/bench_util.c"
# pushes MCA-ARGS...: "PUSHERS COPIES MEASURED": how many processes said "exchange push
# on", how many single-copy pushes they made (-1: the benchmark failed), and how many
# printed a measured single-copy cost
pushes() {
	local trace
	trace=$(mktemp -d)
	"${launch[@]}" --bind-to core $(smx_config_args smx-cma) --mca btl_base_verbose info "$@" \
		strace -ff -qq -e trace=process_vm_writev -o "$trace/t" "$bench" --mode alltoall \
		--sizes 1M --samples 2 >"$trace/out" 2>&1 || true
	if ! grep -q "^alltoall,1048576," "$trace/out"; then
		cat "$trace/out" >&2
		echo -1 -1 -1
	else
		echo "$(policy "$(cat "$trace/out")" push | grep -c "^1$")" \
			"$(cat "$trace"/t* | grep -c "^[0-9]* *process_vm_writev")" \
			"$(policy "$(cat "$trace/out")" cost | grep -Ec "^[0-9]+\.[0-9]+$")"
	fi
	rm -rf "$trace"
}
read -r on_n on _ < <(pushes --mca btl_smx_single_copy_cost_max always)
read -r off_n off _ < <(pushes --mca btl_smx_exchange_push false)
read -r zero_n zero _ < <(pushes --mca btl_smx_single_copy_cost_max never)
read -r dflt_n dflt dflt_measured < <(pushes)
# by default: pushes exactly when the processes measured single copy as cheap (both or
# neither, on one machine; if they disagree, a push by one side is enough)
if [ "$dflt_n" = 0 ]; then dflt_ok=$([ "$dflt" = 0 ] && echo y); else dflt_ok=$([ "$dflt" -gt 0 ] 2>/dev/null && echo y); fi
[ "$on_n" = 2 ] && [ "$on" -gt 0 ] 2>/dev/null && [ "$off_n" = 0 ] && [ "$off" = 0 ] &&
	[ "$zero_n" = 0 ] && [ "$zero" = 0 ] && [ "$dflt_ok" = y ] && [ "$dflt_measured" = 2 ] &&
	echo "ok: an exchange is pushed by single copy ($on copies), none with exchange_push false" \
		"or a cost limit of 0; by default $dflt_n of 2 processes pushed ($dflt copies), as measured" ||
	fail "exchange push: always $on_n/$on, exchange_push false $off_n/$off, cost limit 0" \
		"$zero_n/$zero, default $dflt_n/$dflt (processes saying on / pushes; want both" \
		"processes to print a measured cost: $dflt_measured)"
# 6. more processes than hardware threads (oversubscribed): where single copy counts as
#    cheap (btl_smx_single_copy_cost_max always), every rendezvous goes by single copy
#    (process_vm_readv, smsc/cma's copy_from), even where every class and the busy rule
#    say never; with btl_smx_single_copy_oversubscribed false or a cost limit of 0, none
#    (the single-copy window is closed, so that no rule measures single copy's cost, which
#    reads through process_vm_readv too; adaptive copy is off: the rule alone, which
#    adaptive copy starts from; section 12 tests what it adds)
# (hwloc's count, as btl/smx sees it: the allowed cpuset, which may differ from nproc's)
threads=$(hwloc-calc -N pu all 2>/dev/null || nproc)
over=$((threads + 1))
never=()
for cls in l2 l3 package numa remote; do
	never+=(--mca "btl_smx_single_copy_min_$cls" 0)
done
reads() {
	local trace
	trace=$(mktemp -d)
	mpirun -np "$over" --oversubscribe --bind-to none $(smx_root_args) \
		$(smx_config_args smx-cma) "${never[@]}" --mca btl_smx_single_copy_min_busy 0 \
		--mca btl_smx_exchange_push false --mca btl_smx_single_copy_cost_max "${2:-always}" \
		--mca btl_smx_single_copy_window_max 0 \
		--mca btl_smx_single_copy_oversubscribed "$1" --mca btl_smx_adaptive_copy 0 \
		--mca btl_base_verbose info \
		strace -ff -qq -e trace=process_vm_readv -o "$trace/t" "$bench" --mode alltoall \
		--sizes 64K --samples 2 >"$trace/out" 2>&1 || true
	if ! grep -q "^alltoall,65536," "$trace/out"; then
		cat "$trace/out" >&2
		echo -1
	else
		echo "verbose $(policy "$(cat "$trace/out")" every_get_single | grep -c "^1$")"
		# reads of another process's memory (local rank 0 reads one byte of its own at
		# init, to say in the calibration file's key whether cma works here)
		for t in "$trace"/t*; do
			grep -v "process_vm_readv(${t##*.}," "$t" || true
		done | grep -c "^[0-9]* *process_vm_readv" || true
	fi
	rm -rf "$trace"
}
on=$(reads true)
off=$(reads false)
zero=$(reads true 0)
# (verbose N: the processes whose policy says every get by single copy)
[ "$(head -1 <<<"$on")" = "verbose $over" ] && [ "$(tail -1 <<<"$on")" -gt 0 ] 2>/dev/null &&
	[ "$(head -1 <<<"$off")" = "verbose 0" ] && [ "$(tail -1 <<<"$off")" = 0 ] &&
	[ "$(head -1 <<<"$zero")" = "verbose 0" ] && [ "$(tail -1 <<<"$zero")" = 0 ] &&
	echo "ok: $over processes on $threads hardware threads: every rendezvous by single copy" \
		"($(tail -1 <<<"$on") reads), none with btl_smx_single_copy_oversubscribed false" \
		"or a cost limit of 0" ||
	fail "oversubscribed: on: $on (want verbose $over and reads > 0); off: $off, cost" \
		"limit 0: $zero (want 0 and 0)"

# 7. a sender writes to a peer through the peer's queue until it has sent it
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

# 8. a burst of 10000 sends of 16 KiB to a receiver that is not receiving yet: what the
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

# 9. the counters of the two kinds of get: none by single copy without an SMSC component,
#    some with cma on a node made busy (single copy from 8 KiB whatever it costs)
gets() { # gets MCA-ARGS...: "SINGLE DOUBLE" summed over both ranks, or "failed"
	local out
	out=$("${launch[@]}" --mca btl_base_verbose info "$@" "$build/tests/mpi/p2p" 2>&1 | tr -d '\000')
	grep -q "^p2p: PASS" <<<"$out" || { echo failed; return; }
	both_ranks_gets "$out"
}
# both_ranks_gets OUTPUT: "SINGLE DOUBLE" summed over the two ranks' finalize lines, or
# "failed" where there are not two
both_ranks_gets() {
	smx_transfer_counts "$1" | awk '{ print ($1 == 2 ? $2 " " $3 : "failed") }'
}
read -r nosc_single nosc_double < <(gets $(smx_config_args smx-nosc))
read -r busy_single busy_double < <(gets $(smx_config_args smx-busy))
[ "$nosc_single" = 0 ] && [ "${nosc_double:-0}" -gt 0 ] 2>/dev/null &&
	[ "${busy_single:-0}" -gt 0 ] 2>/dev/null &&
	echo "ok: gets counted: without single copy $nosc_double by double copy, none single;" \
		"busy with cma $busy_single single" ||
	fail "get counters: smx-nosc '$nosc_single $nosc_double', smx-busy '$busy_single $busy_double'"

# 10. the single-copy window: where it is open (btl_smx_single_copy_window_cost_max always)
#     always), every class sends eagerly up to btl_smx_eager_limit_window (17408) and
#     single-copies every rendezvous up to btl_smx_single_copy_window_max (64 KiB), here
#     where the l3 class's own threshold says never: a 16 KiB ping-pong goes eagerly, 32
#     KiB by single copy, 128 KiB by double copy; closed (0, or a window of 0 bytes), 32
#     KiB goes eagerly again (l3's limit, 34816); otherwise it opens exactly in the
#     processes that measured a single copy at btl_smx_single_copy_window_cost_max
#     memcpys or less (1.75 by default; 1000 opens it here, 0.01 keeps it closed). The
#     gets are counted with adaptive copy off (the rule alone, which it starts from).
window_gets() { # window_gets SIZE MCA-ARGS...: "SINGLE DOUBLE WINDOWS EAGER-LIMITS" summed
	# over both ranks (WINDOWS: peers printed with a window), or "failed"
	local size=$1 out
	shift
	out=$("${launch[@]}" --bind-to core $(smx_config_args smx-cma) --mca btl_base_verbose info \
		--mca btl_smx_adaptive_copy 0 "$@" "$bench" --mode pingpong --sizes "$size" \
		--samples 2 2>&1 | tr -d '\000')
	grep -q "^pingpong,$size," <<<"$out" || { echo failed; return; }
	echo "$(both_ranks_gets "$out")" \
		"$(policy "$out" window_max | grep -c "^65536$")" \
		"$(policy "$out" '[a-z0-9]*\.eager_limit' | sort -u | paste -sd/)"
}
wopen=(--mca btl_smx_single_copy_window_cost_max always)
read -r w16 < <(window_gets 16384 "${wopen[@]}")
read -r w32 < <(window_gets 32768 "${wopen[@]}")
read -r w128 < <(window_gets 131072 "${wopen[@]}")
read -r c32 < <(window_gets 32768 --mca btl_smx_single_copy_window_cost_max never)
read -r z32 < <(window_gets 32768 "${wopen[@]}" --mca btl_smx_single_copy_window_max 0)
[ "$w16" = "0 0 2 17408" ] && [[ $w32 =~ ^[1-9][0-9]*\ 0\ 2\ 17408$ ]] &&
	[[ $w128 =~ ^0\ [1-9][0-9]*\ 2\ 17408$ ]] && [ "$c32" = "0 0 0 34816" ] &&
	[ "$z32" = "0 0 0 34816" ] &&
	echo "ok: the single-copy window open: 16 KiB eager, 32 KiB by single copy" \
		"(${w32%% *} gets), 128 KiB by double copy; closed or empty: 32 KiB eager" ||
	fail "single-copy window (single gets, double gets, peers with a window, eager limits):" \
		"open: 16 KiB '$w16' (want 0 0 2 17408), 32 KiB '$w32' (want N 0 2 17408)," \
		"128 KiB '$w128' (want 0 N 2 17408); closed '$c32', empty '$z32' (want 0 0 0 34816)"
# window_judged LIMIT: "PROCESSES DISAGREEING OPENED": processes that printed a measured
# cost and the window's state with btl_smx_single_copy_window_cost_max LIMIT, how many of
# them opened it against the limit, how many opened it; or "failed"
window_judged() {
	local out
	out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_base_verbose info \
		--mca btl_smx_single_copy_window_cost_max "$1" "$build/tests/mpi/anysource" 2>&1 |
		tr -d '\000')
	grep -q "^anysource: PASS" <<<"$out" || { echo failed; return; }
	sed -n 's/.*btl:smx: policy: cost=\([0-9.]*\) .* window_max=\([0-9]*\) .*/\1 \2/p' \
		<<<"$out" | awk -v limit="$1" '{ n++; opened += ($2 != 0) }
		# the cost is printed to 2 decimals: a value equal to the limit may be either side
		# (the limit is in % of a memcpy)
		$1 * 100 != limit && ($1 * 100 < limit) != ($2 != 0) { bad++ }
		END { print n + 0, bad + 0, opened + 0 }'
}
read -r dflt_judged < <(window_judged 175)
read -r wide_judged < <(window_judged 100000)
read -r narrow_judged < <(window_judged 1)
[ "${dflt_judged% *}" = "2 0" ] && [ "$wide_judged" = "2 0 2" ] && [ "$narrow_judged" = "2 0 0" ] &&
	echo "ok: the window opens as each process measured: by default in ${dflt_judged##* } of 2," \
		"with a limit of 1000 memcpys in both, with 0.01 in neither" ||
	fail "measured window (processes, disagreeing with the limit, opened): default" \
		"'$dflt_judged' (want 2 0 N), limit 1000 '$wide_judged' (want 2 0 2), limit 0.01" \
		"'$narrow_judged' (want 2 0 0)"

# 11. a new pair ring's pages are all written when it is made, and a segment's chunk area
#     when the segment is (tmpfs gives a page at its first write; a fault in the middle
#     of later traffic costs whoever meets it, and makes its first transfers look dear
#     to the adaptive copy): after 64 small messages, which keep to a ring's first 32
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
# 12. adaptive copy: a sender that computes outside MPI while its rendezvous waits
#     (latesender: 20 sends of 64 KiB, 5 ms of computing each) cannot serve a double copy;
#     the receiver, measuring that, pulls from it by single copy: most of its gets, after
#     one change of method; and its own 16 KiB message to that peer, below the eager
#     limit, goes by a get (single copy far cheaper on gets of up to 256 KiB shortens
#     the class's eager limit to 4 KiB). With btl_smx_adaptive_copy 0 the class's
#     threshold (never, for the pair of cores here) holds: every get by double copy, the
#     16 KiB message eager. Both with the push ahead off: with it (the default), the
#     sender copies each message as it sends it, nothing waits for it, every get is a
#     double copy and nothing changes. Bytes checked every way.
late() { # late MCA-ARGS...: "SINGLE DOUBLE CHANGES REPLY-GETS PUSHED", or "failed"
	local out
	out=$("${launch[@]}" $(smx_config_args smx-cma) "$@" "$build/tests/smx/latesender" 20 \
		65536 5000 2>&1 | tr -d '\000')
	grep -q "^latesender: PASS" <<<"$out" || { echo failed; return; }
	echo "$(sed -n 's/^latesender: rank 0: gets by single copy \([0-9-]*\), by double copy \([0-9-]*\), changes \([0-9-]*\);.*/\1 \2 \3/p' <<<"$out")" \
		"$(sed -n 's/^latesender: rank 1: 16 KiB reply by \([0-9-]*\) gets; pushed ahead \([0-9-]*\)$/\1 \2/p' <<<"$out")"
}
read -r a_single a_double a_changes a_reply _ < <(late --mca btl_smx_push_max 0)
read -r f_single f_double f_changes f_reply _ < <(late --mca btl_smx_push_max 0 \
	--mca btl_smx_adaptive_copy 0)
read -r p_single p_double p_changes p_reply p_pushed < <(late)
[ "${a_single:-0}" -ge 15 ] 2>/dev/null && [ "${a_changes:-0}" -ge 1 ] 2>/dev/null &&
	[ "${a_reply:-0}" = 1 ] && [ "${f_single:-1}" = 0 ] && [ "${f_double:-0}" = 20 ] &&
	[ "${f_changes:-1}" = 0 ] && [ "${f_reply:-1}" = 0 ] &&
	echo "ok: gets from a sender away computing go by single copy as measured ($a_single" \
		"of 20, $a_changes change), and 16 KiB to it by a get; with adaptive copy off, by" \
		"double copy (20 of 20) and eagerly" ||
	fail "adaptive copy (single double changes reply-gets): '$a_single $a_double $a_changes" \
		"$a_reply' (want >= 15 single, >= 1 change, 1 get); off: '$f_single $f_double" \
		"$f_changes $f_reply' (want 0 20 0 0)"
[ "${p_single:-1}" = 0 ] && [ "${p_changes:-1}" = 0 ] && [ "${p_pushed:-0}" -ge 5 ] 2>/dev/null &&
	[ "${p_double:-0}" = "$p_pushed" ] &&
	echo "ok: pushed ahead, a sender away computing holds nothing up: $p_pushed rendezvous" \
		"pushed, each taken by a double copy, none by single copy, no change" ||
	fail "push ahead (single double changes pushed): '$p_single $p_double $p_changes" \
		"$p_pushed' (want 0, as many as pushed, 0, >= 5)"
# 12b. ... on a crowded node (more processes than hardware threads, the extra ones idle in
#     barriers) the same late sender's gets are weighed by the CPU time their copies take,
#     not by how long they wait: a wait lends the core to another rank. With a single
#     copy made dear (tests/bench/dear-cma.c: 2 us more per page, some ten memcpys of it),
#     rank 0 keeps double copy (the policy says adaptive=work): at most the adaptive
#     copy's tries by single copy, no change. Two ranks alone, the same dear single copy
#     wins by the time it saves: most gets by single copy. Skew off: every message of
#     the 20 by rendezvous. The footprint of large messages (btl_smx_policy.c,
#     smx_footprint): crowded, a peer's pieces in flight fill a quarter of the L2 (4 to 32)
#     and whole-fragment chunks come round after half of it; two ranks, 32 pieces and a
#     cycle of twice the L2 (at least 1 MiB).
cc -O2 -shared -fPIC -o "$build/tests/smx/dear-cma.so" "$top/tests/bench/dear-cma.c" -ldl
dear=(--bind-to none --mca btl_smx_push_max 0 --mca btl_smx_skew off
	-x LD_PRELOAD="$build/tests/smx/dear-cma.so" -x SMX_DEAR_CMA_NS=2000)
crowd=$(mpirun -np "$over" --oversubscribe $(smx_root_args) $(smx_config_args smx-cma) \
	"${dear[@]}" --mca btl_base_verbose info "$build/tests/smx/latesender" 20 65536 5000 2>&1 |
	tr -d '\000')
read -r c_single c_double c_changes < <(sed -n 's/^latesender: rank 0: gets by single copy \([0-9-]*\), by double copy \([0-9-]*\), changes \([0-9-]*\);.*/\1 \2 \3/p' <<<"$crowd")
c_work=$(policy "$crowd" adaptive | grep -c '^work$' || true)
two=$("${launch[@]}" $(smx_config_args smx-cma) "${dear[@]}" --mca btl_base_verbose info \
	"$build/tests/smx/latesender" 20 65536 5000 2>&1 | tr -d '\000')
read -r d_single d_double d_changes _ < <(sed -n 's/^latesender: rank 0: gets by single copy \([0-9-]*\), by double copy \([0-9-]*\), changes \([0-9-]*\);.*/\1 \2 \3/p' <<<"$two")
# the largest L2 (what btl/smx takes from hwloc), in bytes
l2=$(cat /sys/devices/system/cpu/cpu*/cache/index*/level 2>/dev/null | paste -d' ' - \
	<(cat /sys/devices/system/cpu/cpu*/cache/index*/size 2>/dev/null) |
	awk '$1 == 2 { n = $2 + 0; if ($2 ~ /M/) n *= 1024; if (n > m) m = n } END { print m * 1024 }')
want_pieces=$((l2 / 4 / 34816)); want_pieces=$((want_pieces < 4 ? 4 : want_pieces > 32 ? 32 : want_pieces))
want_cycle2=$((2 * l2 < 1048576 ? 1048576 : 2 * l2))
footprint() { echo "$(policy "$1" pieces_in_flight | sort -u | paste -sd,)/$(policy "$1" chunk_cycle | sort -u | paste -sd,)"; }
if [ "${l2:-0}" -gt 0 ] 2>/dev/null; then
	[ "$(footprint "$crowd")" = "$want_pieces/$((l2 / 2))" ] &&
		[ "$(footprint "$two")" = "32/$want_cycle2" ] &&
		echo "ok: the footprint of large messages, L2 $((l2 >> 10)) KiB: crowded" \
			"$(footprint "$crowd") (pieces in flight/chunk cycle bytes), 2 processes" \
			"$(footprint "$two")" ||
		fail "footprint (pieces in flight/chunk cycle): crowded '$(footprint "$crowd")'" \
			"(want $want_pieces/$((l2 / 2))), 2 processes '$(footprint "$two")' (want" \
			"32/$want_cycle2)"
else
	fail "no L2 size in /sys/devices/system/cpu/cpu*/cache for the footprint check"
fi
grep -q "^latesender: PASS" <<<"$crowd" && [ "$c_work" = "$over" ] &&
	[ "${c_single:-9}" -le 5 ] 2>/dev/null && [ "$((c_single + c_double))" = 20 ] &&
	[ "${c_changes:-1}" = 0 ] && [ "${d_single:-0}" -ge 15 ] 2>/dev/null &&
	echo "ok: $over processes on $threads hardware threads, single copy dear: the late" \
		"sender's gets by double copy as their copies' CPU time says ($c_double of 20," \
		"$c_single tries); 2 processes: by single copy as their time says ($d_single)" ||
	fail "crowded, dear single copy (single double changes): '$c_single $c_double" \
		"$c_changes' (want <= 5, the rest of 20, 0), policy adaptive=work in $c_work of" \
		"$over; 2 processes: '$d_single $d_double $d_changes' (want >= 15 single)"
# 12c. ... and there every receiver is taken for late up to two fragments (the policy's
#     late_all): an all-to-all of 64 KiB goes eagerly, in several chunks (MPI_T
#     btl_smx_skew_eager_sends), in every process; between 2 processes, and on the crowded
#     node with btl_smx_skew off, by rendezvous. (Above two fragments a receiver found
#     late still gets its messages eagerly: whether one is found is the scheduler's.)
eager_sends() { # eager_sends NP SIZE MCA-ARGS...: each process's count, or "failed"
	local out np=$1 size=$2
	shift 2
	out=$(mpirun -np "$np" --oversubscribe --bind-to none $(smx_root_args) \
		$(smx_config_args smx-cma) "$@" --mca btl_base_verbose info "$bench" --mode alltoall \
		--sizes "$size" --samples 3 --target-mb 4 --print-pvar btl_smx_skew_eager_sends 2>&1 |
		tr -d '\000')
	grep -q "^alltoall,$size," <<<"$out" || { echo "failed: $out"; return; }
	echo "$(policy "$out" late_all | sort -u | paste -sd,)/$(sed -n 's/^# pvar [0-9]* btl_smx_skew_eager_sends \([0-9]*\)$/\1/p' <<<"$out" |
		awk '{ n++; if ($1 > 0) m++ } END { print m + 0 "of" n + 0 }')"
}
late64=$(eager_sends "$over" 65536)
two64=$(eager_sends 2 65536)
off64=$(eager_sends "$over" 65536 --mca btl_smx_skew off)
[ "$late64" = "1/${over}of$over" ] && [ "$two64" = "0/0of2" ] &&
	[ "$off64" = "0/0of$over" ] &&
	echo "ok: a crowded node takes every receiver for late up to two fragments:" \
		"64 KiB eagerly in every process; 2 processes and skew off by rendezvous" \
		"(late_all/processes with eager sends: $late64 $two64 $off64)" ||
	fail "crowded late_all (late_all/processes with eager sends): 64 KiB '$late64' (want" \
		"1/${over}of$over), 2 processes '$two64'" \
		"(want 0/0of2), skew off '$off64' (want 0/0of$over)"
# 13. a late receiver (btl_smx_skew.c): rank 1 computes 30 us before each of 8 windows of 32
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
# 14. a message larger than its receive fails it with MPI_ERR_TRUNCATE, posted or not, its
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
exit $status
