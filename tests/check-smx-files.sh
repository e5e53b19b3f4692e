#!/usr/bin/env bash
# btl/smx's files on the host: its shared-memory files are gone after a normal run, once
# every peer has mapped them, and after kill -9 of a rank; btl_smx_backing_directory
# takes them elsewhere, and one that does not exist keeps smx out, by name.
# (The other btl/smx checks: tests/check-smx-*.sh; data correctness: the MPI suite in
# check-mpi-host.sh, which runs smx configurations.)
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SMX_TOP/tests/smx/lib.sh"
smx_programs linger
# Our files of this test's jobs only: others may run beside us.
files_of() { ls /dev/shm 2>/dev/null | grep -E "^smx\.[0-9a-f]+\.[0-9]+\.($1)$" || true; }
# Pids of the ranks that said "btl:smx: 2 local processes" (opal prints them 0-padded).
smx_pids() {
	sed -n 's/.*\[[^]]*:\([0-9]*\)\] btl:smx: 2 local processes.*/\1/p' |
		sed 's/^0*//' | paste -sd'|'
}

# Normal run
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_base_verbose info \
	"$build/tests/mpi/anysource" 2>&1 | tr -d '\000' || true)
pids=$(smx_pids <<<"$out")
grep -q "^anysource: PASS" <<<"$out" || fail "the job on smx failed: $out"
[ -n "$pids" ] || fail "btl/smx was not used (no verbose line)"
[ -z "$pids" ] || [ -z "$(files_of "$pids")" ] || fail "files left after a normal run: $(files_of "$pids")"
[ $status = 0 ] && echo "ok: nothing left in /dev/shm after a normal run"

# Once every peer has mapped a segment, its file is unlinked (the memory lives on in
# the mappings), so kill -9 of a rank cannot leave anything behind; the job aborts
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

# Btl_smx_backing_directory: the segments' files go there (and are gone after the
# run); a directory that does not exist keeps smx out, saying why, and the job runs
# on sm
bdir=$(mktemp -d)
trace=$(mktemp -d)
out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_smx_backing_directory "$bdir" \
	--mca btl_base_verbose info strace -ff -qq -e trace=openat -o "$trace/t" \
	"$build/tests/mpi/anysource" 2>&1 | tr -d '\000' || true)
made=$(cat "$trace"/t* | grep -c "openat(.*\"$bdir/smx\.[0-9a-f]*\.[0-9]*\.[0-9]*\", O_RDWR|O_CREAT" || true)
grep -q "^anysource: PASS" <<<"$out" && grep -q "btl:smx: 2 local processes" <<<"$out" &&
	[ "$made" = 2 ] && [ -z "$(ls -A "$bdir")" ] &&
	echo "ok: btl_smx_backing_directory $bdir holds both segments' files, empty after the run" ||
	fail "backing directory $bdir: want smx used, 2 files made there ($made) and gone: $(ls -A "$bdir") $out"
rm -rf "$bdir" "$trace"
out=$("${launch[@]}" --mca btl smx,sm,self --mca btl_smx_backing_directory /nonexistent/smx \
	--mca btl_base_verbose info "$build/tests/mpi/anysource" 2>&1 | tr -d '\000' || true)
grep -q "^anysource: PASS" <<<"$out" && ! grep -q "btl:smx: 2 local processes" <<<"$out" &&
	grep -q "btl:smx: cannot create a segment of [0-9]* bytes as /nonexistent/smx/smx\." <<<"$out" &&
	echo "ok: a backing directory that does not exist keeps smx out, by name; the job runs on sm" ||
	fail "backing directory /nonexistent/smx: want smx refused by name and the job on sm: $out"
exit $status
