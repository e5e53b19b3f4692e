# tests/lib.sh: what the test scripts (tests/check-*.sh) share. Source it first:
#   . "$(dirname "$0")/lib.sh"
# It sets SMX_TOP (the checkout: as exported, or this file's parent directory; the name
# contrib/ uses too) and status=0, and defines fail MESSAGE (prints "FAIL: MESSAGE" and
# sets status=1; a script ends with `exit $status`), smx_root_args (mpirun's
# --allow-run-as-root when run as root, for `args+=($(smx_root_args))`) and
# smx_fault_injection (below).
# SPDX-License-Identifier: BSD-3-Clause
# (as contrib/lib.sh names it: make gives build/.. for a build configured as ../configure)
SMX_TOP=$(cd "${SMX_TOP:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd)
status=0

fail() { echo "FAIL: $*"; status=1; }

smx_root_args() {
	if [ "$(id -u)" = 0 ]; then
		echo --allow-run-as-root
	fi
}

# smx_fault_injection CONFIG [RUN-SUITE-ARGS...]: the MPI suite's checks must be able to
# fail: with one received byte corrupted, p2p and datatypes each have to fail, and for
# that reason (not a launch failure, a timeout or a crash). Says ok or FAIL per program;
# returns 1 if any did not. Needs tests/configurations.sh.
smx_fault_injection() {
	local cfg=$1 out p rc=0
	shift
	# shellcheck disable=SC2046
	if out=$("$SMX_TOP/tests/mpi/run-suite" --np 2 "$@" --inject-fault --only p2p \
		--only datatypes --label "fault injection (must FAIL)" $(smx_config_args "$cfg") 2>&1); then
		echo "FAIL: a corrupted byte went unnoticed by the MPI suite"
		return 1
	fi
	for p in p2p datatypes; do
		if grep -q "^  FAIL  $p " <<<"$out" &&
			grep -Eq "\| $p: rank 1: .*byte [0-9]+ (of [0-9]+ )?is 0x" <<<"$out"; then
			echo "ok: $p reports the corrupted byte"
		else
			echo "FAIL: $p did not report the corrupted byte:"
			echo "$out"
			rc=1
		fi
	done
	return $rc
}
