#!/usr/bin/env bash
# The harness the VM tests stand on: tests/vm/run-in-vm reports the guest command's status,
# a panic, a timeout; boots again only when the kernel panicked before /init (and at most
# 3 times); and contrib/env.sh and lib.sh ignore an SMX_BUILD that another checkout's
# env.sh exported. Each guest here boots without our module, in about 3 s under TCG.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=${SMX_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
build=${SMX_BUILD:-$top/build}
vm=$top/tests/vm/run-in-vm
out=$(mktemp -d "${TMPDIR:-/tmp}/smx-vm-runner.XXXXXX")
trap 'rm -rf "$out"' EXIT
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# run NAME ARGS...: run-in-vm ARGS, output in $out/NAME.log; sets rc and boots.
run() {
	local name=$1
	shift
	rc=0
	(cd "$top" && "$vm" --no-module "$@") >"$out/$name.log" 2>&1 || rc=$?
	boots=$(grep -c '^\[run-in-vm [0-9:]*\] booting ' "$out/$name.log" || true)
	echo "== $name: status $rc, $boots boot(s)"
}

expect() { # expect NAME STATUS BOOTS
	if [ "$rc" != "$2" ] || [ "$boots" != "$3" ]; then
		fail "$1: expected status $2 after $3 boot(s), got $rc after $boots"
		tail -n 20 "$out/$1.log"
	fi
}

run status sh -c 'exit 7'
expect status 7 1

run output sh -c 'echo "guest says $((6 * 7))"; echo "on stderr" >&2'
expect output 0 1
grep -qx 'guest says 42' "$out/output.log" || fail "output: the guest's stdout did not come back"
grep -qx 'on stderr' "$out/output.log" || fail "output: the guest's stderr did not come back"

# A panic once the command runs is the command's doing: reported, never booted again.
run late-panic sh -c 'echo c >/proc/sysrq-trigger; sleep 30'
expect late-panic 125 1
grep -q "kernel panicked (see above)" "$out/late-panic.log" ||
	fail "late-panic: run-in-vm did not say that the kernel panicked"

# A kernel that runs out of memory while it boots panics before /init: booted 3 times.
run early-panic --append mem=20M true
expect early-panic 125 3
[ "$(grep -c 'before /init: booting again' "$out/early-panic.log" || true)" = 2 ] ||
	fail "early-panic: expected two 'booting again' lines"

run timeout --timeout 8 sleep 120
expect timeout 124 1
grep -q 'did not finish within 8 s' "$out/timeout.log" || fail "timeout: no explanation"

# The SMX_BUILD that another checkout's env.sh exports (with its SMX_TOP) is not ours.
other=$out/other-checkout
got=$(cd "$out" && env SMX_TOP="$other" SMX_BUILD="$other/build" \
	bash -c '. "$1/contrib/env.sh" && echo "$SMX_BUILD"' env-test "$top" 2>/dev/null) ||
	fail "env.sh: sourcing it failed"
[ "$got" = "$top/build" ] || fail "env.sh: SMX_BUILD is '$got', not '$top/build'"
got=$(cd "$out" && env SMX_TOP="$other" SMX_BUILD="$other/build" \
	bash -c '. "$1/contrib/lib.sh" && echo "$SMX_BUILD"' lib-test "$top" 2>"$out/lib.err") ||
	fail "lib.sh: sourcing it failed"
[ "$got" = "$top/build" ] || fail "lib.sh: SMX_BUILD is '$got', not '$top/build'"
grep -q "ignoring SMX_BUILD=$other/build" "$out/lib.err" || fail "lib.sh: no word of the override"
# This checkout's own SMX_BUILD (a build elsewhere) is kept.
got=$(cd "$out" && env SMX_TOP="$top" SMX_BUILD="$build" \
	bash -c '. "$1/contrib/lib.sh" && echo "$SMX_BUILD"' lib-test "$top" 2>/dev/null) ||
	fail "lib.sh: sourcing it failed"
[ "$got" = "$build" ] || fail "lib.sh: its own SMX_BUILD became '$got'"

if [ "$failures" != 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "run-in-vm and the environment scripts behave as documented"
