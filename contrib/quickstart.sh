#!/usr/bin/env bash
# contrib/quickstart.sh: set everything up, then run the project's main job: the benchmark
# with the transport configurations side by side in one run, and the comparison table.
#
#  1. on this host: btl/smx beside stock btl/sm, each with smsc/cma and with no single
#     copy, Debian's MPICH when installed, and what a user would pick instead from PyPI:
#     MPICH 5, Intel MPI and Open MPI 5.0.11's btl/sm (real timings);
#  2. in the QEMU guest, where the knemlike module is loaded (this host cannot load
#     modules): btl/smx + smsc/knemlike beside the stock configurations. Emulated: those
#     timings show that the path works, not how fast it is.
# Options are passed to contrib/setup.sh (e.g. --with-ompi=DIR).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
"$(dirname "$0")/setup.sh" "$@"
. "$(dirname "$0")/env.sh" # SMX_TOP (this checkout), SMX_BUILD, ...
. "$SMX_TOP/contrib/lib.sh"
cd "$SMX_TOP"

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

# The MPIs from PyPI (installed by setup unless --no-other-mpis), each started by its own
# launcher, ranks pinned one per core like the others: MPICH 5 and Intel MPI run the
# benchmark built by that MPICH's mpicc (Intel MPI runs MPICH-ABI programs), Open MPI
# 5.0.11 its own build, on its btl/sm.
others=()
launch=$SMX_TOP/tests/bench/pympi-launch
if [ -z "$(smx_pympi_problem mpich)" ]; then
	abi_bench=$SMX_BUILD/tests/bench/smx_bench.pypi-mpich
	"$(smx_pympi_venv mpich)/bin/mpicc" -O2 -Wall -Wextra -Wno-stringop-overflow \
		-o "$abi_bench" tests/bench/smx_bench.c tests/bench/bench_util.c
	others+=(--config mpich-5.0.2= --launcher "mpich-5.0.2=$launch mpich"
		 --binary "mpich-5.0.2=$abi_bench")
	if [ -z "$(smx_pympi_problem impi)" ]; then
		others+=(--config impi-2021.19= --launcher "impi-2021.19=$launch impi"
			 --binary "impi-2021.19=$abi_bench")
	else
		echo "quickstart: no Intel MPI column: $(smx_pympi_problem impi)" >&2
	fi
else
	echo "quickstart: no MPICH 5 and Intel MPI columns: $(smx_pympi_problem mpich)" >&2
fi
if [ -z "$(smx_pympi_problem ompi)" ]; then
	ompi_bench=$SMX_BUILD/tests/bench/smx_bench.pypi-ompi
	"$(smx_pympi_venv ompi)/bin/mpicc" -O2 -Wall -Wextra \
		-o "$ompi_bench" tests/bench/smx_bench.c tests/bench/bench_util.c
	others+=(--config "ompi-5.0.11-sm=--mca pml ob1 --mca btl sm,self --mca smsc cma"
		 --launcher "ompi-5.0.11-sm=$launch ompi" --binary "ompi-5.0.11-sm=$ompi_bench")
else
	echo "quickstart: no Open MPI 5.0.11 column: $(smx_pympi_problem ompi)" >&2
fi

echo "== 1. host: ping-pong, 2 ranks, off-cache, configurations interleaved"
tests/bench/run-bench --np 2 --mode pingpong --quick --preset sm-cma --preset sm-nosc \
	--preset smx-cma --preset smx-nosc "${mpich[@]}" "${others[@]}" --baseline sm-cma \
	--csv "$SMX_BUILD/quickstart-host.csv"

echo "== 2. QEMU guest with knemlike.ko: btl/smx + smsc/knemlike beside the stock transport"
# btl/smx + knemlike twice: as configured (in the guest its two CPUs share an L3, where it
# starts on double copy, and emulation makes a single copy cost 4 memcpys, so it measures
# double copy cheaper and stays) and with single copy through knemlike pinned from 8 KiB;
# then what btl/smx itself counted.
. tests/configurations.sh
single8k=$(smx_config_args smx-knemlike-single8k)
tests/vm/run-in-vm bash -c "tests/bench/run-bench --np 2 --mode pingpong --reps 2 --samples 2 \
	--sizes 0,4K,64K,1M,4M --off-cache 16 --preset smx-knemlike --preset smx-knemlike-single8k \
	--preset sm-knemlike --preset sm-cma --preset sm-nosc --baseline sm-cma \
	--csv '$SMX_BUILD/quickstart-vm.csv' || exit 1
	echo '== btl/smx + knemlike (single copy from 8 KiB), 1 MiB ping-pong: what each process counted'
	mpirun --allow-run-as-root -np 2 $single8k --mca btl_base_verbose info \
		'$SMX_BUILD/tests/bench/smx_bench' --sizes 1M --samples 1 2>&1 |
		grep 'gets by single copy'"
