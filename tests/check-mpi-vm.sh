#!/usr/bin/env bash
# The MPI data-verification suite inside the QEMU guest (Debian's kernel, TCG), where the
# project's kernel module is loaded: btl/smx with cma, with no single copy and with
# knemlike, and stock btl/sm with knemlike, at 2 and 4 ranks (tests/configurations.sh);
# then the registration cache's hits (MPI_T) and the module's counters once every job is
# gone, and a /dev/shm too small for btl/smx. Quick mode: every category, fewer repeats.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=${SMX_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top/tests/configurations.sh"

# A missing VM kernel is a setup failure, never a skip: CI must run this test.
[ -n "${SMX_VM_KERNEL_DIR:-}" ] && [ -f "$SMX_VM_KERNEL_DIR/kernel.env" ] || {
	echo "FAIL: no VM kernel (SMX_VM_KERNEL_DIR='${SMX_VM_KERNEL_DIR:-}'): run contrib/setup.sh without --no-vm"
	exit 1
}

build=${SMX_BUILD:-$top/build}
. "$SMX_VM_KERNEL_DIR/kernel.env"
[ -f "$build/kmod/$ABI/knemlike.ko" ] || {
	echo "FAIL: knemlike.ko is not built for the guest's kernel $ABI (make in $build)"
	exit 1
}

# Build on the host: compiling under TCG is slow, and the guest sees the same tree.
"$top/tests/mpi/run-suite" --build-only
mkdir -p "$build/tests/smsc"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smsc/cache_hits" \
	"$top/tests/smsc/cache_hits.c"

suite="$top/tests/mpi/run-suite --quick"
script=""
for run in $(printf '2:%s ' $SMX_VM_MPI_CONFIGS_NP2) $(printf '4:%s ' $SMX_VM_MPI_CONFIGS_NP4); do
	np=${run%%:*}
	cfg=${run#*:}
	script+="$suite --np $np --label '$cfg np=$np (VM)' $(smx_config_args "$cfg") || status=1; "
done
script+="echo '== registration cache (sm + knemlike)'; "
script+="timeout 300 mpirun --allow-run-as-root -np 2 $(smx_config_args sm-knemlike) "
script+="$build/tests/smsc/cache_hits || status=1; "
# Every region went with its job: nothing may be left registered.
script+="live=\$(cat /sys/class/misc/knemlike/stats/regions_live); "
script+="echo \"knemlike: \$(cat /sys/class/misc/knemlike/stats/copies) copies, \$live regions left\"; "
script+="[ \"\$live\" = 0 ] || { echo 'FAIL: regions left registered after the jobs ended'; status=1; }; "
# Last, as it shrinks the guest's /dev/shm: a node without room for every process's
# segment refuses btl/smx with a message, rather than SIGBUS in the middle of the run.
script+="echo '== /dev/shm of 2 MiB: btl/smx refuses, by name'; "
script+="mount -o remount,size=2m /dev/shm; "
script+="out=\$(timeout 300 mpirun --allow-run-as-root -np 2 --mca btl smx,self "
script+="$build/tests/mpi/anysource 2>&1 | tr -d '\\000'); "
script+="if grep -q 'more shared memory than /dev/shm' <<<\"\$out\" && ! grep -q PASS <<<\"\$out\"; "
script+="then echo 'ok: no room in /dev/shm is said, and nothing runs on smx'; "
script+="else echo \"FAIL: a full /dev/shm: \$out\"; status=1; fi; "
cd "$top"
exec "$top/tests/vm/run-in-vm" bash -c "status=0; $script exit \$status"
