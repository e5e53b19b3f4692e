#!/usr/bin/env bash
# knemlike.ko on both supported kernel series (Debian bookworm's 6.1 and bookworm-backports'
# 6.12): build it against each series' headers, boot that kernel in the test guest with
# the module loaded, and run every kernel-module test there (tests/kmod/run-kmod-tests).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$top/build}
series_list=${SMX_KMOD_SERIES:-bookworm bookworm-backports}

bindir=$build/tests/kmod
mkdir -p "$bindir"
for t in kmod_ops kmod_stale kmod_hostile kmod_revoke kmod_held kmod_attach kmod_lifetimes kmod_export kmod_export_hard; do
	gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -pthread -I"$top/kmod/include/uapi" \
		-o "$bindir/$t" "$top/tests/kmod/$t.c"
done

for series in $series_list; do
	# The kernel as prepare-kernel describes it for this checkout (ABI, KBUILD, ...).
	env=$("$top/tests/vm/prepare-kernel" --series "$series" --print-env) || {
		echo "FAIL: cannot prepare the $series kernel"
		status=1
		continue
	}
	eval "$env"
	out=$build/kmod/$ABI
	echo "== knemlike.ko for $ABI ($series)"
	if ! make -s -C "$top/kmod" KDIR="$KBUILD" OUT="$out" >"$build/kmod-$ABI.log" 2>&1 ||
	   grep -q 'warning:' "$build/kmod-$ABI.log"; then
		cat "$build/kmod-$ABI.log"
		echo "FAIL: the module does not build cleanly against $ABI"
		status=1
		continue
	fi
	(cd "$top" && SMX_KMOD_PATH=$out/knemlike.ko \
		"$top/tests/vm/run-in-vm" --series "$series" --module "$out/knemlike.ko" \
		"$top/tests/kmod/run-kmod-tests" "$bindir") || status=1
done
exit $status
