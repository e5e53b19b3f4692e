#!/usr/bin/env bash
# tests/check-fast.sh: the fast tier, for day-to-day work (`make check-fast` in the build
# tree; a few minutes on a warm machine). The unit tests, ompi_info's view of the
# components, the module's kernel style, and the MPI data-verification suite on the host
# at 2 ranks on the main configurations, with its fault injection (a
# corrupted byte must be caught). `make check` runs all of this and everything else.
# SPDX-License-Identifier: BSD-3-Clause
set -uo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$top/build}
. "$top/tests/configurations.sh"

start=$SECONDS
step() { # step NAME COMMAND...: run it, say how long it took and whether it passed
	local name=$1 t=$SECONDS
	shift
	echo "== $name"
	if "$@"; then
		echo "ok: $name ($((SECONDS - t)) s)"
	else
		echo "FAIL: $name ($((SECONDS - t)) s)"
		status=1
	fi
}

step "unit tests" "$build/tests/unit/smx_unit_tests" --gtest_brief=1
step "ompi_info" bash "$top/tests/check-ompi-info.sh"
step "kernel style" bash "$top/tests/check-kmod-style.sh"
for cfg in $SMX_FAST_CONFIGS; do
	# shellcheck disable=SC2046
	step "MPI suite, $cfg, 2 ranks" "$top/tests/mpi/run-suite" --np 2 \
		--label "$cfg np=2" $(smx_config_args "$cfg")
done

# The suite's checks must be able to fail: one received byte corrupted, each program
# fails for that reason (not a launch failure, a timeout or a crash).
fault_injection() {
	local out p rc=0
	# shellcheck disable=SC2046
	if out=$("$top/tests/mpi/run-suite" --np 2 --quick --inject-fault --only p2p \
		--only datatypes --label "fault injection (must FAIL)" \
		$(smx_config_args smx-cma) 2>&1); then
		echo "a corrupted byte went unnoticed by the MPI suite"
		return 1
	fi
	for p in p2p datatypes; do
		if ! grep -q "^  FAIL  $p " <<<"$out" ||
			! grep -Eq "\| $p: rank 1: .*byte [0-9]+ (of [0-9]+ )?is 0x" <<<"$out"; then
			echo "$p did not report the corrupted byte:"
			echo "$out"
			rc=1
		fi
	done
	return $rc
}
step "fault injection on btl/smx" fault_injection

echo "check-fast: $([ $status = 0 ] && echo "all passed" || echo FAILED) in $((SECONDS - start)) s"
exit $status
