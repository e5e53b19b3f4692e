# tests/smx/lib.sh: what the btl/smx checks on the host (tests/check-smx-*.sh) share.
# Source it after tests/lib.sh. It sets build, reads tests/configurations.sh, builds the
# MPI suite's programs, sets launch (mpirun of 2 ranks, as root too), and defines
#   smx_programs NAME...  build tests/smx/NAME.c into $build/tests/smx/NAME
#   smx_bench             build the benchmark (tests/bench/smx_bench.c) as $bench
# SPDX-License-Identifier: BSD-3-Clause
build=${SMX_BUILD:-$SMX_TOP/build}
. "$SMX_TOP/tests/configurations.sh"
"$SMX_TOP/tests/mpi/run-suite" --build-only
launch=(mpirun -np 2)
launch+=($(smx_root_args))
bench=$build/tests/smx/smx_bench

smx_programs() {
	local p
	mkdir -p "$build/tests/smx"
	for p in "$@"; do
		"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/$p" "$SMX_TOP/tests/smx/$p.c"
	done
}

smx_bench() {
	mkdir -p "$build/tests/smx"
	"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$bench" "$SMX_TOP/tests/bench/smx_bench.c" \
		"$SMX_TOP/tests/bench/bench_util.c"
}
