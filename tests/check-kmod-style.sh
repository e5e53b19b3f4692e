#!/usr/bin/env bash
# The module's sources pass the kernel's checkpatch.pl (--no-tree -f) without a warning.
# Debian ships checkpatch.pl in linux-source-<series>, not in the headers packages: the
# script and its data files are taken from that package once and cached.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SMX_TOP/contrib/lib.sh"
series=6.1
dir=$SMX_CACHE/checkpatch/linux-source-$series
if [ ! -f "$dir/scripts/checkpatch.pl" ]; then
	mkdir -p "$SMX_CACHE/checkpatch/dl"
	(cd "$SMX_CACHE/checkpatch/dl" && rm -f ./*.deb &&
		apt-get -q -oAPT::Sandbox::User=root download "linux-source-$series" >/dev/null) ||
		smx_die "cannot download linux-source-$series (for checkpatch.pl)"
	dpkg-deb --fsys-tarfile "$SMX_CACHE"/checkpatch/dl/linux-source-"$series"_*.deb |
		tar -xO "./usr/src/linux-source-$series.tar.xz" | xz -dc |
		tar -C "$SMX_CACHE/checkpatch" -x "linux-source-$series/scripts/checkpatch.pl" \
			"linux-source-$series/scripts/spelling.txt" \
			"linux-source-$series/scripts/const_structs.checkpatch"
	rm -f "$SMX_CACHE"/checkpatch/dl/*.deb
fi
cd "$SMX_TOP/kmod"
out=$(perl "$dir/scripts/checkpatch.pl" --no-tree --quiet --show-types -f \
	knemlike_*.c knemlike_*.h include/uapi/linux/knemlike.h 2>&1) || true
if [ -n "$out" ]; then
	echo "$out"
	echo "FAIL: checkpatch.pl reports the module's sources"
	exit 1
fi
echo "ok: checkpatch.pl --no-tree -f is clean on kmod/"
