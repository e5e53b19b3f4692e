#!/usr/bin/env bash
# tests/check-fast.sh: the fast tier, for day-to-day work (`make check-fast` in the build
# tree; how long: docs/testing.md, "How long it takes"). The unit tests, ompi_info's view
# of the components and the parameter tables of docs/ against it, the docs' check, the
# module's kernel style, and the MPI data-verification suite on the host at 2 ranks on
# the main configurations, with its fault injection (a corrupted byte must be caught).
# `make check` runs all of this and everything else.
# SPDX-License-Identifier: BSD-3-Clause
set -uo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$SMX_TOP/build}
. "$SMX_TOP/tests/configurations.sh"

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
step "ompi_info" bash "$SMX_TOP/tests/check-ompi-info.sh"
step "parameter tables in docs/" bash "$SMX_TOP/tests/check-param-docs.sh"
step "the docs' commits, tests, files, timings and lines" bash "$SMX_TOP/tests/check-docs.sh"
step "kernel style" bash "$SMX_TOP/tests/check-kmod-style.sh"
for cfg in $SMX_FAST_CONFIGS; do
	# shellcheck disable=SC2046
	step "MPI suite, $cfg, 2 ranks" "$SMX_TOP/tests/mpi/run-suite" --np 2 \
		--label "$cfg np=2" $(smx_config_args "$cfg")
done

# The suite's checks must be able to fail (a corrupted byte is reported).
step "fault injection on btl/smx" smx_fault_injection smx-cma --quick

echo "check-fast: $([ $status = 0 ] && echo "all passed" || echo FAILED) in $((SECONDS - start)) s"
exit $status
