#!/usr/bin/env bash
# The MPI data-verification suite inside the QEMU guest (Debian's kernel, TCG), where the
# project's kernel module can be loaded. Quick mode: every test category, fewer repeats.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=${SMX_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top/tests/configurations.sh"

# A missing VM kernel is a setup failure, never a skip: CI must run this test.
[ -n "${SMX_VM_KERNEL_DIR:-}" ] && [ -f "$SMX_VM_KERNEL_DIR/kernel.env" ] || {
	echo "FAIL: no VM kernel (SMX_VM_KERNEL_DIR='${SMX_VM_KERNEL_DIR:-}'): run contrib/setup.sh without --no-vm"
	exit 1
}

# Build on the host: compiling under TCG is slow, and the guest sees the same tree.
"$top/tests/mpi/run-suite" --build-only
suite="$top/tests/mpi/run-suite --quick"
script=""
for np in 2 4; do
	for cfg in $SMX_MPI_CONFIGS; do
		script+="$suite --np $np --label '$cfg np=$np (VM)' $(smx_config_args "$cfg") || status=1; "
	done
done
cd "$top"
exec "$top/tests/vm/run-in-vm" bash -c "status=0; $script exit \$status"
