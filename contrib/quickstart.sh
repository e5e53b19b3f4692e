#!/usr/bin/env bash
# contrib/quickstart.sh: set everything up, then run the project's main job: the benchmark
# with the transport configurations side by side in one run, and the comparison table.
#
#  1. on this host: btl/smx beside stock btl/sm, each with smsc/cma and with no single
#     copy, and Debian's MPICH when installed (real timings);
#  2. in the QEMU guest, where the knemlike module is loaded (this host cannot load
#     modules): btl/smx + smsc/knemlike beside the stock configurations. Emulated: those
#     timings show that the path works, not how fast it is.
# Options are passed to contrib/setup.sh (e.g. --with-ompi=DIR).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/setup.sh" "$@"
. "$top/contrib/env.sh"
cd "$top"

# Debian's MPICH (installed by setup) as one more column: the benchmark built with its own
# mpicc, launched by its own mpirun (hydra).
mpich=()
if command -v mpicc.mpich >/dev/null && command -v mpirun.mpich >/dev/null; then
	mpich_bench=$SMX_BUILD/tests/bench/smx_bench.mpich
	mkdir -p "$(dirname "$mpich_bench")"
	# -Wno-stringop-overflow: gcc 12 misreads MPICH's MPI_STATUSES_IGNORE as an array
	mpicc.mpich -O2 -Wall -Wextra -Wno-stringop-overflow -o "$mpich_bench" \
		tests/bench/smx_bench.c tests/bench/bench_util.c
	mpich=(--config mpich= --launcher "mpich=$(command -v mpirun.mpich)"
	       --binary "mpich=$mpich_bench")
fi

echo "== 1. host: ping-pong, 2 ranks, off-cache, configurations interleaved"
tests/bench/run-bench --np 2 --mode pingpong --quick --preset sm-cma --preset sm-nosc \
	--preset smx-cma --preset smx-nosc "${mpich[@]}" --baseline sm-cma \
	--csv "$SMX_BUILD/quickstart-host.csv"

echo "== 2. QEMU guest with knemlike.ko: btl/smx + smsc/knemlike beside the stock transport"
# btl/smx + knemlike twice: as configured (in the guest its two CPUs share an L3 and
# emulation makes a single copy cost 4 memcpys, so it keeps to double copy) and as on a busy
# node (single copy through knemlike from 8 KiB); then what btl/smx itself counted.
. tests/configurations.sh
busy=$(smx_config_args smx-knemlike-busy)
tests/vm/run-in-vm bash -c "tests/bench/run-bench --np 2 --mode pingpong --reps 2 --samples 2 \
	--sizes 0,4K,64K,1M,4M --off-cache 16 --preset smx-knemlike --preset smx-knemlike-busy \
	--preset sm-knemlike --preset sm-cma --preset sm-nosc --baseline sm-cma \
	--csv '$SMX_BUILD/quickstart-vm.csv' || exit 1
	echo '== btl/smx + knemlike (busy), 1 MiB ping-pong: what each process counted'
	mpirun --allow-run-as-root -np 2 $busy --mca btl_smx_verbose 1 \
		'$SMX_BUILD/tests/bench/smx_bench' --sizes 1M --samples 1 2>&1 |
		grep 'gets by single copy'"
