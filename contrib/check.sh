#!/usr/bin/env bash
# contrib/check.sh: set everything up (contrib/setup.sh) and run every test (make check).
# Options are passed to contrib/setup.sh (e.g. --with-ompi=DIR).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
start=$SECONDS
"$top/contrib/setup.sh" "$@"
. "$top/contrib/env.sh"
echo "== make check (unit, ompi_info, MPI suite on host and in the VM, benchmark) =="
if ! make -C "$SMX_BUILD" -j1 check; then
	echo "== failed tests' logs =="
	for log in $(find "$SMX_BUILD/tests" -name '*.log' ! -name test-suite.log); do
		trs=${log%.log}.trs
		grep -q '^:test-result: \(FAIL\|ERROR\)' "$trs" 2>/dev/null || continue
		echo "---- $log"
		tail -n 60 "$log"
	done
	echo "contrib/check.sh: FAILED after $((SECONDS - start)) s" >&2
	exit 1
fi
echo "contrib/check.sh: all tests passed in $((SECONDS - start)) s"
