#!/usr/bin/env bash
# Processes that join later on the same node reach each other through btl/smx: a job on
# `btl smx,self` (no other transport to fall back on) spawns children and exchanges
# checked data with them both ways at 1 B to 1 MiB, with btl/smx's counters showing the
# children's rendezvous went through it (tests/mpi/spawn.c), with cma and with no single
# copy; mpi4py's own spawn tests pass on smx,self with 1 and 2 parents; and a corrupted
# byte between parent and child is reported.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SMX_TOP/contrib/lib.sh"
. "$SMX_TOP/tests/configurations.sh"
ompi=${SMX_OMPI_PREFIX:?source contrib/env.sh first (SMX_OMPI_PREFIX is not set)}
mpirun=${SMX_MPIRUN:?run through make check, or source contrib/env.sh after a build}
bindir=${SMX_BUILD:-$SMX_TOP/build}/tests/mpi
"$SMX_TOP/tests/mpi/run-suite" --build-only --only spawn

shm_before=$(ls /dev/shm | grep '^smx\.' | sort || true)
# Parents and children together outnumber the cores here: the children are placed
# oversubscribed (spawn.c asks for it), the parents unbound like the suite's.
launch=("$mpirun" --bind-to none --oversubscribe)
launch+=($(smx_root_args))

for cfg in smx-cma smx-nosc; do
	rc=0
	# shellcheck disable=SC2046
	out=$(timeout -k 10 120 "${launch[@]}" -np 2 $(smx_config_args "$cfg") --mca btl_base_verbose info \
		"$bindir/spawn" --expect-smx 2>&1 | tr -d '\000') || rc=$?
	# The children (job 2) ran smx to their finalize; the parents' counters are printed
	# by the program (Open MPI 5.0.7 does not finalize the BTLs of a process that
	# spawned, so their finalize line never comes).
	jobs=$(sed -n 's/.*btl:smx: \[\[\([0-9]*\),\([0-9]*\)\],[0-9]*\]: [0-9]* gets by single copy.*/\2/p' \
		<<<"$out" | sort | uniq -c | awk '{ printf "%s%s:%s", sep, $2, $1; sep = " " }')
	if [ $rc = 0 ] && grep -q "^spawn: PASS" <<<"$out" && [ "$jobs" = "2:2" ] &&
		[ "$(grep -c 'rendezvous from the child through btl/smx' <<<"$out")" = 2 ]; then
		echo "ok: $cfg: parents and spawned children exchanged checked data through btl/smx" \
			"($(grep -o '[0-9]* rendezvous from the child' <<<"$out" | head -1) on rank 0)"
	else
		fail "$cfg: spawn (exit $rc, btl/smx ran in jobs:ranks '$jobs'): $(tail -n 30 <<<"$out")"
	fi
done

# The check must be able to fail: a byte corrupted between child and parent.
rc=0
# shellcheck disable=SC2046
out=$(SMX_TEST_INJECT_FAULT=1 timeout -k 10 120 "${launch[@]}" -np 2 -x SMX_TEST_INJECT_FAULT \
	$(smx_config_args smx-cma) "$bindir/spawn" 2>&1 | tr -d '\000') || rc=$?
if [ $rc != 0 ] && grep -q "^spawn: FAIL" <<<"$out" &&
	grep -Eq "parent rank 1: 1 B from the child.*byte 0 (of [0-9]+ )?is 0x" <<<"$out"; then
	echo "ok: a corrupted byte from a child is reported"
else
	fail "a corrupted byte from a child went unnoticed (exit $rc): $(tail -n 20 <<<"$out")"
fi

# mpi4py's spawn tests (44 of them: spawn, spawn_multiple, one child or several, with
# errcodes and arguments) on smx,self, with one parent (alone on the node: smx still
# starts for the children's sake) and with two.
problem=$(smx_mpi4py_problem "$ompi")
[ -z "$problem" ] || { echo "FAIL: $problem"; exit 1; }
python=$SMX_MPI4PY_DIR/venv/bin/python
testdir=$SMX_MPI4PY_DIR/src/mpi4py-$SMX_MPI4PY_VERSION/test
# Each parent rank records its own outcomes (tests/mpi4py/record.py): with 2 parents the
# two unittest reports interleave on the terminal, so that output is not parsed.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for np in 1 2; do
	rc=0 res=$work/np$np
	mkdir -p "$res"
	out=$(timeout -k 10 300 "${launch[@]}" -np "$np" --mca btl smx,self \
		"$python" "$SMX_TOP/tests/mpi4py/record.py" "$testdir" "$res" -q -i test_spawn 2>&1 |
		tr -d '\000') || rc=$?
	bad="" counts=""
	for ((r = 0; r < np; r++)); do
		f=$res/rank$r.tsv
		if ! [ -f "$f" ] || [ "$(tail -n 1 "$f")" != "#complete" ]; then
			bad+=" rank $r did not complete;"
			continue
		fi
		n=$(grep -c $'^pass\t' "$f" || true)
		other=$(grep -v -e $'^pass\t' -e $'^skip\t' -e '^#complete$' "$f" || true)
		[ -z "$other" ] || bad+=" rank $r: $(tr '\n' ' ' <<<"$other");"
		[ "$n" -gt 0 ] || bad+=" rank $r passed no test;"
		counts+=" $n"
	done
	if [ $rc = 0 ] && [ -z "$bad" ]; then
		echo "ok: mpi4py test_spawn.py on btl smx,self with $np parent(s): passed per rank:$counts"
	else
		fail "mpi4py test_spawn.py on btl smx,self, np=$np (exit $rc):$bad $(tail -n 30 <<<"$out")"
	fi
done
# Nothing of the parents' or the children's segments stays behind.
left=$(comm -13 <(echo "$shm_before") <(ls /dev/shm | grep '^smx\.' | sort || true))
[ -z "$left" ] && echo "ok: nothing left in /dev/shm" || fail "left in /dev/shm: $left"
exit $status
