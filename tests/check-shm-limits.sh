#!/usr/bin/env bash
# btl/smx in a small /dev/shm, as in a container (Docker's default is 64 MiB): a tmpfs of
# the given size mounted on /dev/shm in a mount namespace of the job's own, ranks checking
# every byte they receive (the MPI suite's p2p and unexpected, quick sizes). Each run on
# btl/smx passes, or is refused at MPI_Init with btl/smx's message; none is killed by a
# signal (btl/smx reserves every page before it writes it). Stock btl/sm runs beside it
# in the same cells: btl/smx must pass wherever btl/sm passes. In the two cells where it
# used to die of SIGBUS, the whole suite (quick sizes) runs on btl/smx. Last, 2 processes
# spawn 2 more in a small /dev/shm: the children's segments follow the same rules, and
# parents and children exchange checked data through btl/smx (btl/sm cannot reach a
# spawned job).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$SMX_TOP/build}
. "$SMX_TOP/tests/configurations.sh"
"$SMX_TOP/tests/mpi/run-suite" --build-only
"$SMX_TOP/tests/mpi/run-suite" --build-only --only spawn
if ! unshare -m true 2>/dev/null; then
	echo "FAIL: this test mounts a small tmpfs in a mount namespace: unshare -m needs root"
	exit 1
fi
root=($(smx_root_args))

# outcome MIB NP CONFIG PROGRAM [ARGS...]: PASS, REFUSED (MPI_Init failed, saying why),
# SIGNAL (a rank killed by SIGBUS or SIGSEGV), or OTHER; the log in $log
outcome() {
	local mib=$1 np=$2 cfg=$3 prog=$4 rc=0
	shift 4
	# shellcheck disable=SC2046
	unshare -m sh -c 'mount -t tmpfs -o size="$1"M tmpfs /dev/shm && shift && exec "$@"' sh \
		"$mib" timeout -k 10 300 mpirun "${root[@]}" -np "$np" --oversubscribe --bind-to none \
		-x SMX_TEST_QUICK=1 $(smx_config_args "$cfg") "$build/tests/mpi/$prog" "$@" \
		>"$log.raw" 2>&1 || rc=$?
	tr -d '\000' <"$log.raw" >"$log" # (the ranks' output may hold NULs)
	if grep -Eq 'Bus error|Segmentation fault|exited on signal (7|11) ' "$log"; then
		echo SIGNAL
	elif [ $rc = 0 ] && grep -q "^$prog: PASS" "$log"; then
		echo PASS
	elif [ $rc != 0 ] &&
		grep -Eq 'will not be used|not enough space|unable to reach each other' "$log"; then
		echo REFUSED
	else
		echo OTHER
	fi
}
log=$(mktemp)
trap 'rm -f "$log" "$log.raw"' EXIT
# MiB and ranks: 2 MiB holds no btl/smx segment of 8 processes; 8 MiB with 8 and 64 MiB
# with 32 killed btl/smx with SIGBUS before it reserved its pages (2026-11-27)
for cell in "2 2" "2 8" "8 8" "8 32" "16 16" "16 32" "64 32" "64 64"; do
	read -r mib np <<<"$cell"
	for prog in p2p unexpected; do
		sm=$(outcome "$mib" "$np" sm-cma "$prog")
		smx=$(outcome "$mib" "$np" smx-cma "$prog")
		line="/dev/shm of $mib MiB, $np ranks, $prog: btl/sm $sm, btl/smx $smx"
		case $smx in
		PASS | REFUSED) ;;
		*) fail "$line"; tail -n 30 "$log"; continue ;;
		esac
		if [ "$sm" = PASS ] && [ "$smx" != PASS ]; then
			fail "$line (btl/smx must run where btl/sm runs)"
			tail -n 30 "$log"
			continue
		fi
		echo "ok: $line"
	done
done
for cell in "8 8" "64 32"; do
	read -r mib np <<<"$cell"
	# shellcheck disable=SC2046
	if unshare -m sh -c 'mount -t tmpfs -o size="$1"M tmpfs /dev/shm && shift && exec "$@"' sh \
		"$mib" env SMX_TEST_QUICK=1 "$SMX_TOP/tests/mpi/run-suite" --np "$np" --quick \
		--label "/dev/shm of $mib MiB, $np ranks" $(smx_config_args smx-cma) >"$log" 2>&1; then
		echo "ok: /dev/shm of $mib MiB, $np ranks: the MPI suite on btl/smx"
	else
		fail "/dev/shm of $mib MiB, $np ranks: the MPI suite on btl/smx"
		tail -n 30 "$log"
	fi
done
for mib in 4 64; do
	smx=$(outcome "$mib" 2 smx-cma spawn --expect-smx)
	if [ "$smx" = PASS ]; then
		echo "ok: /dev/shm of $mib MiB: 2 processes spawned 2, data through btl/smx both ways"
	else
		fail "/dev/shm of $mib MiB, spawn on btl/smx: $smx"
		tail -n 30 "$log"
	fi
done
exit $status
