#!/usr/bin/env bash
# btl/smx (and smsc/knemlike where it runs) under valgrind's memcheck: the MPI suite's
# programs (quick), 2 ranks, through each of smx's paths -- double copy through shared memory,
# single copy through cma, rendezvous pushed ahead (the sender's pieces parked until the
# receive comes) with a single-copy endpoint left unused, no room and the fragment cap --
# cause no memcheck error and leak nothing with a frame of ours in its stack
# (tests/memcheck-scan). Data another process's pieces or a single copy brought into a
# rank must read as initialised there (the programs read every byte they receive).
# Errors of Open MPI, PMIx and libevent alone are counted, not judged; one PMIx error
# reached through our hwloc query is suppressed by name (tests/memcheck.supp). realloc is
# left out: valgrind's allocator never hands a freed address back soon, which is the case
# that program needs. knemlike: the same check runs in the guest (check-mpi-vm.sh); its
# client requests tell memcheck what the kernel wrote.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$SMX_TOP/build}
. "$SMX_TOP/tests/configurations.sh"
command -v valgrind >/dev/null || {
	echo "FAIL: valgrind is not installed (contrib/setup.sh installs it)"
	exit 1
}
"$SMX_TOP/tests/mpi/run-suite" --build-only
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The scanner must be able to fail: a report with an error in our BTL, and one cut short.
mkdir -p "$work/fixture" "$work/cut"
cat >"$work/fixture/1.xml" <<'XML'
<?xml version="1.0"?>
<valgrindoutput><pid>1</pid><status><state>RUNNING</state></status>
<error><kind>InvalidRead</kind><what>Invalid read of size 8</what><stack>
<frame><fn>mca_btl_smx_progress</fn><obj>/x/lib/openmpi/mca_btl_smx.so</obj></frame>
</stack></error><status><state>FINISHED</state></status></valgrindoutput>
XML
printf '<?xml version="1.0"?>\n<valgrindoutput><pid>2</pid><status><state>RUNNING</state></status></valgrindoutput>\n' \
	>"$work/cut/2.xml"
rc=0
"$SMX_TOP/tests/memcheck-scan" "$work/fixture" >/dev/null || rc=$?
[ $rc = 1 ] || fail "memcheck-scan did not flag an error in mca_btl_smx.so (exit $rc)"
rc=0
"$SMX_TOP/tests/memcheck-scan" "$work/cut" >/dev/null || rc=$?
[ $rc = 2 ] || fail "memcheck-scan accepted a run that did not finish (exit $rc)"
rc=0
"$SMX_TOP/tests/memcheck-scan" --reports 2 "$work/fixture" >/dev/null || rc=$?
[ $rc = 2 ] || fail "memcheck-scan accepted one report where two were due (exit $rc)"

# counter FIELD OUTPUT: the sum over the ranks' finalize lines (btl_base_verbose info) of
# field FIELD (1 single copy, 2 double, 3 pushed ahead; smx_transfer_counts)
counter() {
	smx_transfer_counts "$2" | awk -v f="$1" '{ print $(f + 1) }'
}

launch=(mpirun -np 2 --bind-to none)
launch+=($(smx_root_args))
launch+=($(smx_memcheck_mpirun_args) --mca btl_base_verbose info)

# config, what its runs must have done (counter field: 1 single copy, 2 double, 3 pushed
# ahead), programs
run_config() {
	local cfg=$1 field=$2 what=$3 p out total=0 rc
	shift 3
	for p in "$@"; do
		mkdir -p "$work/$cfg-$p"
		rc=0
		out=$(timeout 600 "${launch[@]}" $(smx_config_args "$cfg") \
			$(smx_memcheck_valgrind "$work/$cfg-$p") "$build/tests/mpi/$p" 2>&1) || rc=$?
		if [ $rc != 0 ] || ! grep -q "^$p: PASS" <<<"$out"; then
			fail "$p on $cfg under valgrind (exit $rc): $(tail -n 15 <<<"$out")"
			continue
		fi
		total=$((total + $(counter "$field" "$out")))
		rc=0
		"$SMX_TOP/tests/memcheck-scan" --reports 2 "$work/$cfg-$p" >"$work/scan" || rc=$?
		if [ $rc = 0 ]; then
			echo "ok: $p on $cfg: $(tail -n 1 "$work/scan" | sed 's/^memcheck-scan: //')"
		else
			fail "$p on $cfg:"
			sed 's/^/    /' "$work/scan"
		fi
	done
	[ "$total" -gt 0 ] && echo "ok: $cfg: $total $what under memcheck" ||
		fail "$cfg: no $what under memcheck: the path was not tested"
}

run_config smx-nosc 2 "gets by double copy" p2p datatypes anysource unexpected window collectives rma threads
run_config smx-single8k 1 "gets by single copy (cma)" p2p datatypes collectives rma
run_config smx-double 3 "rendezvous pushed ahead" p2p collectives window
run_config smx-tight 2 "gets by double copy in the smallest segment" p2p unexpected collectives threads
[ $status = 0 ] && echo "PASS: no memcheck error or leak through btl/smx" || echo "FAIL: see above"
exit $status
