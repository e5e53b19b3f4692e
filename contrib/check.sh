#!/usr/bin/env bash
# contrib/check.sh: set everything up (contrib/setup.sh) and run every test (make check).
# Options are passed to contrib/setup.sh (e.g. --with-ompi=DIR).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
start=$SECONDS
"$(dirname "$0")/setup.sh" "$@"
. "$(dirname "$0")/env.sh" # SMX_TOP (this checkout), SMX_BUILD, ...
durations() { # each test's time, longest first (tests/timed.sh ends its log with it)
	echo "== time per test (s) =="
	find "$SMX_BUILD/tests" -name '*.log' ! -name test-suite.log -exec grep -h '^timed: ' {} + |
		sed -n 's/^timed: \(.*\) took \([0-9]*\) s, exit \(.*\)/\2 \1 (exit \3)/p' | sort -rn ||
		true # (a log without the line, a test killed: the table only, never the verdict)
}
echo "== make check (unit, ompi_info, MPI suite on host and in the VM, benchmark) =="
if ! make -C "$SMX_BUILD" -j1 check; then
	echo "== failed tests' logs =="
	for log in $(find "$SMX_BUILD/tests" -name '*.log' ! -name test-suite.log); do
		trs=${log%.log}.trs
		grep -q '^:test-result: \(FAIL\|ERROR\)' "$trs" 2>/dev/null || continue
		echo "---- $log"
		tail -n 60 "$log"
	done
	durations
	echo "contrib/check.sh: FAILED after $((SECONDS - start)) s" >&2
	exit 1
fi
durations # where the time went (how long a run takes: docs/testing.md)
echo "contrib/check.sh: all tests passed in $((SECONDS - start)) s"
