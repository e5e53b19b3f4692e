#!/usr/bin/env bash
# knemlike.ko on the three supported kernel series (Debian bookworm's 6.1,
# bookworm-backports' 6.12 and unstable's 7.2): build it against each series' headers
# (unstable's in a tree of their own: tests/vm/build-module), boot that kernel in the test
# guest with the module loaded, and run every kernel-module test there
# (tests/kmod/run-kmod-tests).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$SMX_TOP/build}
series_list=${SMX_KMOD_SERIES:-bookworm bookworm-backports sid}

bindir=$build/tests/kmod
mkdir -p "$bindir"
for t in kmod_ops kmod_stale kmod_hostile kmod_revoke kmod_held kmod_attach kmod_lifetimes kmod_export kmod_export_hard; do
	gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -pthread -I"$SMX_TOP/kmod/include/uapi" \
		-o "$bindir/$t" "$SMX_TOP/tests/kmod/$t.c"
done

for series in $series_list; do
	# The kernel as prepare-kernel describes it for this checkout (ABI, KBUILD, ...).
	env=$("$SMX_TOP/tests/vm/prepare-kernel" --series "$series" --print-env) || {
		echo "FAIL: cannot prepare the $series kernel"
		status=1
		continue
	}
	eval "$env"
	out=$build/kmod/$ABI
	echo "== knemlike.ko for $ABI ($series)"
	if ! "$SMX_TOP/tests/vm/build-module" --series "$series" "$out" >"$build/kmod-$ABI.log" 2>&1 ||
	   grep -q 'warning:' "$build/kmod-$ABI.log"; then
		cat "$build/kmod-$ABI.log"
		echo "FAIL: the module does not build cleanly against $ABI"
		status=1
		continue
	fi
	(cd "$SMX_TOP" && SMX_KMOD_PATH=$out/knemlike.ko \
		"$SMX_TOP/tests/vm/run-in-vm" --series "$series" --module "$out/knemlike.ko" \
		"$SMX_TOP/tests/kmod/run-kmod-tests" "$bindir") || status=1
done
exit $status
