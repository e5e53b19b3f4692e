#!/usr/bin/env bash
# The MPI data-verification suite on the host, at 2 and 4 ranks, for every transport
# configuration this tree supports. Each program checks every byte it receives.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SMX_TOP/tests/configurations.sh"

for np in 2 4; do
	for cfg in $SMX_MPI_CONFIGS; do
		# shellcheck disable=SC2046
		"$SMX_TOP/tests/mpi/run-suite" --np "$np" --label "$cfg np=$np" $(smx_config_args "$cfg") ||
			status=1
	done
done

# The checks themselves must be able to fail (a corrupted byte is reported).
smx_fault_injection sm-cma || status=1
exit $status
