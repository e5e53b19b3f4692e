#!/usr/bin/env bash
# The MPI data-verification suite on the host, at 2 and 4 ranks, for every transport
# configuration this tree supports. Each program checks every byte it receives.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$top/tests/configurations.sh"

for np in 2 4; do
	for cfg in $SMX_MPI_CONFIGS; do
		# shellcheck disable=SC2046
		"$top/tests/mpi/run-suite" --np "$np" --label "$cfg np=$np" $(smx_config_args "$cfg") ||
			status=1
	done
done

# The checks themselves must be able to fail: with one received byte corrupted, each
# program has to fail, and for that reason (not a launch failure, a timeout or a crash).
# shellcheck disable=SC2046
if out=$("$top/tests/mpi/run-suite" --np 2 --inject-fault --only p2p --only datatypes \
	--label "fault injection (must FAIL)" $(smx_config_args sm-cma) 2>&1); then
	echo "FAIL: a corrupted byte went unnoticed by the MPI suite"
	status=1
else
	for p in p2p datatypes; do
		if grep -q "^  FAIL  $p " <<<"$out" &&
			grep -Eq "\| $p: rank 1: .*byte [0-9]+ (of [0-9]+ )?is 0x" <<<"$out"; then
			echo "ok: $p reports the corrupted byte"
		else
			echo "FAIL: $p did not report the corrupted byte:"
			echo "$out"
			status=1
		fi
	done
fi
exit $status
