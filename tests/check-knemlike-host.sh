#!/usr/bin/env bash
# smsc/knemlike on a host without the module: a job that asks for it explicitly gets a
# clear message saying why it cannot be used and runs on (without single copy); a job that
# does not ask is not bothered; a wrong MCA value is named. (With the module: the VM tests.)
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=${SMX_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
build=${SMX_BUILD:-$top/build}
"$top/tests/mpi/run-suite" --build-only
prog=$build/tests/mpi/anysource
launch=(mpirun -np 2 --mca btl sm,self)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
status=0

# expect NAME PATTERN ARGS...: the job must succeed and print PATTERN (or, with !PATTERN,
# must not print it).
expect() {
	local name=$1 pattern=$2 out rc=0
	shift 2
	out=$("${launch[@]}" "$@" "$prog" 2>&1 | tr -d '\000') || rc=$?
	if [ $rc != 0 ] || ! grep -q "^anysource: PASS" <<<"$out"; then
		echo "FAIL: $name: the job itself failed (exit $rc)"; echo "$out" | tail -20; status=1
	elif [ "${pattern:0:1}" = "!" ] && grep -q "${pattern:1}" <<<"$out"; then
		echo "FAIL: $name: unexpected '${pattern:1}'"; echo "$out" | tail -20; status=1
	elif [ "${pattern:0:1}" != "!" ] && ! grep -q "$pattern" <<<"$out"; then
		echo "FAIL: $name: no '$pattern' in the output"; echo "$out" | tail -20; status=1
	else
		echo "ok: $name"
	fi
}

if [ -e /dev/knemlike ]; then
	echo "FAIL: this test expects a host without /dev/knemlike"
	exit 1
fi
expect "explicit request without the module says the device is missing" \
	"its device is missing" --mca smsc knemlike
expect "the message names the device" "Device: /nonexistent/knemlike" \
	--mca smsc knemlike --mca smsc_knemlike_device /nonexistent/knemlike
expect "a device that is not knemlike is reported as an interface mismatch" \
	"does not speak the interface" --mca smsc knemlike --mca smsc_knemlike_device /dev/null
expect "no message when knemlike was not asked for" "!knemlike" --mca smsc ^cma
expect "a negative cache limit is refused by name" "Parameter: smsc_knemlike_cache_max_entries" \
	--mca smsc_knemlike_cache_max_entries -1
exit $status
