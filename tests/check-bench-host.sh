#!/usr/bin/env bash
# The benchmark runs the stock configurations side by side in one run (short run): every
# configuration gets a median at every size, with a ratio against the baseline, in the
# table and in the CSV. Numbers are not judged here: benchmarks are evidence, not tests.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
# bw with the buffers in cache too: a window's messages each have a buffer of their own
# (with one buffer for all, the receiver's stamp check failed, on every transport)
for mode in pingpong alltoall bw bw-hot; do
	hot=()
	[ "$mode" = bw-hot ] && hot=(--off-cache 0)
	"$SMX_TOP/tests/bench/run-bench" --np 2 --mode "${mode%-hot}" "${hot[@]}" --reps 2 --samples 2 \
		--sizes 0,4K,1M --preset sm-cma --preset sm-nosc --csv "$csv"
	# 3 sizes x 2 configurations of medians, each with a finite ratio.
	medians=$(awk -F, '$1 == "median" && $9 != "nan" && $7 > 0' "$csv" | wc -l)
	if [ "$medians" != 6 ]; then
		echo "FAIL: $mode: expected 6 medians with ratios in the CSV, found $medians"
		status=1
	fi
done

# Process skew (a consumer computing before each receive): the producer's and the
# consumer's window times, each configuration a median at each size with a ratio.
for mode in skew skew-consumer; do
	"$SMX_TOP/tests/bench/run-bench" --np 2 --mode "$mode" --window 8 --delay-us 20 --reps 2 \
		--samples 2 --sizes 0,4K,64K --preset sm-cma --preset sm-nosc --csv "$csv"
	medians=$(awk -F, '$1 == "median" && $9 != "nan" && $7 > 0' "$csv" | wc -l)
	if [ "$medians" != 6 ]; then
		echo "FAIL: $mode: expected 6 medians with ratios in the CSV, found $medians"
		status=1
	fi
done

# What a user would pick instead, from PyPI (contrib/setup.sh installs them): each started
# by tests/bench/pympi-launch with its own launcher, beside stock sm in one run; every one
# must give a median at every size. MPICH 5 and Intel MPI run the benchmark built by that
# MPICH's mpicc, Open MPI 5.0.11 its own build.
. "$SMX_TOP/contrib/lib.sh"
work=$(mktemp -d)
trap 'rm -f "$csv"; rm -rf "$work"' EXIT
others=()
for name in mpich impi ompi; do
	problem=$(smx_pympi_problem "$name")
	[ -z "$problem" ] || { echo "FAIL: $problem"; exit 1; }
done
"$(smx_pympi_venv mpich)/bin/mpicc" -O2 -Wno-stringop-overflow -o "$work/abi" \
	"$SMX_TOP/tests/bench/smx_bench.c" "$SMX_TOP/tests/bench/bench_util.c" "$SMX_TOP/opal/mca/btl/smx/btl_smx_store.c"
"$(smx_pympi_venv ompi)/bin/mpicc" -O2 -o "$work/ompi" \
	"$SMX_TOP/tests/bench/smx_bench.c" "$SMX_TOP/tests/bench/bench_util.c" "$SMX_TOP/opal/mca/btl/smx/btl_smx_store.c"
launch=$SMX_TOP/tests/bench/pympi-launch
others=(--config mpich= --launcher "mpich=$launch mpich" --binary "mpich=$work/abi"
	--config impi= --launcher "impi=$launch impi" --binary "impi=$work/abi"
	--config "ompi=--mca pml ob1 --mca btl sm,self" --launcher "ompi=$launch ompi"
	--binary "ompi=$work/ompi")
"$SMX_TOP/tests/bench/run-bench" --np 2 --mode pingpong --reps 1 --samples 2 --sizes 0,4K,1M \
	--preset sm-cma "${others[@]}" --csv "$csv"
for label in mpich impi ompi; do
	medians=$(awk -F, -v l="$label" '$1 == "median" && $2 == l && $7 > 0' "$csv" | wc -l)
	if [ "$medians" = 3 ]; then
		echo "ok: $label (PyPI) has a median at each of 3 sizes"
	else
		echo "FAIL: $label (PyPI): expected 3 medians in the CSV, found $medians"
		status=1
	fi
done

# tool_rows NAME WANT AWK OK-TEXT CMD...: a benchmark tool without MPI must succeed (it
# exits 1 naming a wrong byte) and print WANT rows that the awk program AWK counts.
tool_rows() {
	local name=$1 want=$2 prog=$3 ok=$4 out rows
	shift 4
	if out=$("$@"); then
		rows=$(awk "$prog" <<<"$out")
		if [ "$rows" = "$want" ]; then
			echo "ok: $name: $ok"
			return
		fi
		echo "FAIL: $name: expected $want rows, found $rows"
	else
		echo "FAIL: $name failed:"
	fi
	echo "$out"
	status=1
}

# The handoff limit (tests/bench/handoff): every method gives a time at every size, and
# the bytes each message brought are checked.
"${CC:-cc}" -O2 -Wall -Wextra -Werror -o "$work/handoff" "$SMX_TOP/tests/bench/handoff.c" \
	"$SMX_TOP/tests/bench/bench_util.c" "$SMX_TOP/opal/mca/btl/smx/btl_smx_store.c"
tool_rows handoff 4 \
	'!/^#/ && $1 ~ /^[0-9]+$/ { n = 0; for (i = 2; i <= NF; i++) n += ($i + 0 > 0); if (n == 5) r++ } END { print r + 0 }' \
	"5 methods timed at 4 sizes, every message's bytes right" \
	"$work/handoff" --reps 1 --sizes 0,1000,5000,64K --off-cache 64 \
	--methods memcpy,memcpy+p+r4M,nt+p,movsb+ring,vec32+t+r4M

# What two cores copying halves gain over one (tests/bench/split-copy: the most a
# cooperative copy could): a time for each way at every size, every copy's bytes right.
"${CC:-cc}" -O2 -Wall -Wextra -Werror -pthread -o "$work/split-copy" \
	"$SMX_TOP/tests/bench/split-copy.c" "$SMX_TOP/tests/bench/bench_util.c"
tool_rows split-copy 2 \
	'!/^#/ && $1 ~ /^[0-9]+$/ && $2 > 0 && $3 > 0 && $4 > 0 { r++ } END { print r + 0 }' \
	"one core and two timed at 2 sizes, every copy's bytes right" \
	"$work/split-copy" --reps 3 --sizes 64K,1M --off-cache 16

# The threaded message rate (tests/bench/smx_threads): 4 ranks of 3 threads, each thread
# with a peer of its own, on btl/smx and on stock btl/sm; then 2 ranks of 4 threads that
# share their peer, with synchronous sends (blocking MPI_Ssend one at a time, as MPICH's
# mt_ssendrecv, and windows of MPI_Issend); every message's stamps checked (it exits 1
# naming a wrong one), a rate at each size.
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -pthread -o "$work/threads" \
	"$SMX_TOP/tests/bench/smx_threads.c" "$SMX_TOP/tests/bench/bench_util.c"
. "$SMX_TOP/tests/configurations.sh"
for conf in smx-cma sm-cma; do
	if out=$(mpirun -np 4 --oversubscribe --bind-to none $(smx_root_args) \
		$(smx_config_args "$conf") "$work/threads" --threads 3 --samples 2 \
		--target-msgs 20000 --sizes 8,1K,40000 2>&1); then
		rows=$(grep -c '^3,[0-9]*,[0-9]*,[0-9.]*,[1-9][0-9]*$' <<<"$out" || true)
		if [ "$rows" = 3 ]; then
			echo "ok: smx_threads on $conf: 4 ranks x 3 threads, a rate at each of 3 sizes"
		else
			echo "FAIL: smx_threads on $conf: expected 3 rates, found $rows"; echo "$out"
			status=1
		fi
	else
		echo "FAIL: smx_threads on $conf failed:"; echo "$out"
		status=1
	fi
	for send in ssend issend; do
		if out=$(mpirun -np 2 $(smx_root_args) $(smx_config_args "$conf") "$work/threads" \
			--peers pairs --threads 4 --send $send --window 16 --samples 2 \
			--target-msgs 2000 --sizes 4,40000 2>&1); then
			rows=$(grep -c '^4,[0-9]*,[0-9]*,[0-9.]*,[1-9][0-9]*$' <<<"$out" || true)
			if [ "$rows" = 2 ]; then
				echo "ok: smx_threads --send $send on $conf: 2 ranks x 4 threads, a rate at each of 2 sizes"
			else
				echo "FAIL: smx_threads --send $send on $conf: expected 2 rates, found $rows"
				echo "$out"
				status=1
			fi
		else
			echo "FAIL: smx_threads --send $send on $conf failed:"; echo "$out"
			status=1
		fi
	done
done
exit $status
