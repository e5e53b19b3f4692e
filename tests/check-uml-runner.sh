#!/usr/bin/env bash
# The UML harness: tests/vm/run-in-uml runs a command in User-mode Linux 7.2 with 2 CPUs
# and knemlike.ko loaded, and returns its status and output, as tests/vm/run-in-vm does for
# QEMU; the host's root read-only, the current directory writable at its path, /tmp the
# guest's own, the host's topology where it has the host's CPU count; a module that does not load is a setup failure (125), trouble in the
# guest's kernel log fails a command that succeeded (99), a timeout is 124 and leaves no
# process of the guest behind. Each guest boots in about 2 s (the UML tree is built once,
# about 10 minutes, and cached: tests/vm/prepare-uml).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
uml=$SMX_TOP/tests/vm/run-in-uml
out=$(mktemp -d "${TMPDIR:-/tmp}/smx-uml-runner.XXXXXX")
trap 'rm -rf "$out"' EXIT

# run NAME ARGS...: run-in-uml ARGS from $out, stdout in $out/NAME.log, stderr in
# $out/NAME.err; sets rc.
run() {
	local name=$1
	shift
	rc=0
	(cd "$out" && "$uml" "$@") >"$out/$name.log" 2>"$out/$name.err" || rc=$?
	echo "== $name: status $rc"
}

# expect NAME STATUS: or FAIL with the run's output.
expect() {
	if [ "$rc" != "$2" ]; then
		fail "$1: expected status $2, got $rc"
		tail -n 20 "$out/$1.log" "$out/$1.err"
		return 1
	fi
}

run status sh -c 'exit 7'
expect status 7

run output sh -c 'echo "guest says $((6 * 7))"; echo "on stderr" >&2'
if expect output 0; then
	grep -qx 'guest says 42' "$out/output.log" || fail "output: the guest's stdout did not come back"
	grep -qx 'on stderr' "$out/output.err" || fail "output: the guest's stderr did not come back"
fi

# What the command finds: UML 7.2, 2 CPUs, the module, our variables, the shares; not a
# file of the host's /tmp outside them.
host_only=$(mktemp /tmp/smx-uml-runner-host.XXXXXX)
trap 'rm -rf "$out" "$host_only"' EXIT
run inside sh -c '
	echo "release $(uname -r)"
	echo "cpus $(nproc)"
	grep -m1 "^model name" /proc/cpuinfo
	[ -c /dev/knemlike ] && echo "device /dev/knemlike"
	grep -q "^knemlike " /proc/modules && echo "module knemlike"
	echo "in uml ${SMX_IN_UML:-unset}"
	echo "written in the guest" >"$PWD/from-guest"
	touch /usr/smx-uml-runner 2>/dev/null || echo "root read-only"
	[ -e "$1" ] || echo "tmp is its own"
	echo "topology $(lstopo-no-graphics --no-io --of synthetic 2>&1)"
	echo "package $(cat /sys/devices/system/cpu/cpu1/topology/physical_package_id)"' sh "$host_only"
if expect inside 0; then
	for line in 'release 7\.2\..*' 'cpus 2' 'model name.*: UML' 'device /dev/knemlike' \
		'module knemlike' 'in uml 1' 'root read-only' 'tmp is its own'; do
		grep -qx "$line" "$out/inside.log" || fail "inside: no line '$line' from the guest"
	done
	[ "$(cat "$out/from-guest" 2>/dev/null)" = "written in the guest" ] ||
		fail "inside: a file written in the current directory did not reach the host"
	# With the host's CPU count, the host's topology (UML's own has no caches, and a
	# package number of -1).
	if [ "$(getconf _NPROCESSORS_ONLN)" = 2 ]; then
		for line in "topology $(lstopo-no-graphics --no-io --of synthetic)" \
			"package $(cat /sys/devices/system/cpu/cpu1/topology/physical_package_id)"; do
			grep -qxF "$line" "$out/inside.log" ||
				fail "inside: want '$line', got '$(grep "^${line%% *} " "$out/inside.log")'"
		done
	fi
fi

# Mappings (attachments, exports) do not follow their owner's memory under UML: the module
# is loaded without them (a process then copies by ioctl), and with --module-param
# uml_mappings=1 with them (the benchmarks).
run mappings-off cat /sys/module/knemlike/parameters/uml_mappings
expect mappings-off 0 && { grep -qx N "$out/mappings-off.log" ||
	fail "mappings-off: uml_mappings is '$(cat "$out/mappings-off.log")' by default"; }
run mappings-on --module-param uml_mappings=1 cat /sys/module/knemlike/parameters/uml_mappings
expect mappings-on 0 && { grep -qx Y "$out/mappings-on.log" ||
	fail "mappings-on: --module-param uml_mappings=1 gave '$(cat "$out/mappings-on.log")'"; }
run bad-param --module-param 'no value' true
expect bad-param 1 && { grep -q 'needs NAME=VALUE' "$out/bad-param.err" ||
	fail "bad-param: run-in-uml did not say what a module parameter looks like"; }

run no-module --no-module --smp 1 sh -c '[ ! -e /dev/knemlike ] && nproc'
expect no-module 0 && { grep -qx 1 "$out/no-module.log" || fail "no-module: --smp 1 gave $(cat "$out/no-module.log") CPUs"; }

# A file that is not a module: the guest cannot set up.
run bad-module --module /etc/hostname true
expect bad-module 125 && { grep -q 'could not set up: insmod hostname failed' "$out/bad-module.err" ||
	fail "bad-module: run-in-uml did not say that insmod failed"; }

# What the guest's kernel logs is searched: a warning fails a command that succeeded.
run kernel-log --no-module sh -c 'echo "WARNING: written by check-uml-runner" >/dev/kmsg'
expect kernel-log 99 && { grep -q "kernel log shows trouble" "$out/kernel-log.err" ||
	fail "kernel-log: run-in-uml did not say why it failed"; }

# A timeout stops the guest and every process of it (UML's CPUs and the guest's processes
# are host processes of their own).
marker=smx_uml_runner_$$
run timeout --no-module --timeout 5 --append "$marker" sleep 300
expect timeout 124 && { grep -q 'did not finish within 5 s' "$out/timeout.err" || fail "timeout: no explanation"; }
sleep 1
if pgrep -f "$marker" >/dev/null; then
	fail "timeout: processes of the guest outlived run-in-uml:"
	pgrep -af "$marker"
fi

[ "$status" = 0 ] && echo "ok: run-in-uml behaves as documented"
exit "$status"
