#!/usr/bin/env bash
# contrib/dkms: DKMS registers knemlike, builds and installs it for every kernel with
# headers (here: the VM kernel's), the installed module is for that kernel, and
# --uninstall takes it all back. Changes the machine's DKMS state for its duration.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
command -v dkms >/dev/null || { echo "FAIL: dkms is not installed (contrib/setup.sh installs it)"; exit 1; }
if [ -n "$(dkms status knemlike 2>/dev/null)" ]; then
	echo "FAIL: knemlike is already registered with DKMS here; this test would replace it"
	dkms status knemlike
	exit 1
fi
checked=0
trap '"$SMX_TOP/contrib/dkms/install.sh" --uninstall >/dev/null 2>&1 || true' EXIT
"$SMX_TOP/contrib/dkms/install.sh"
for build in /lib/modules/*/build; do
	[ -f "$build/Makefile" ] || continue
	release=$(basename "$(dirname "$build")")
	checked=$((checked + 1))
	if ! dkms status knemlike -k "$release" | grep -q 'installed'; then
		echo "FAIL: DKMS did not install knemlike for $release"
		status=1
		continue
	fi
	ko=$(find "/lib/modules/$release/updates/dkms" -name 'knemlike.ko*' | head -n 1)
	vermagic=$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)
	if [ "$vermagic" != "$release" ]; then
		echo "FAIL: $ko is for '$vermagic', not $release"
		status=1
	else
		echo "ok: knemlike.ko installed by DKMS for $release"
	fi
done
[ "$checked" -gt 0 ] || { echo "FAIL: no kernel with headers under /lib/modules to build for"; status=1; }
"$SMX_TOP/contrib/dkms/install.sh" --uninstall >/dev/null
trap - EXIT
if [ -n "$(dkms status knemlike)" ] || ls /lib/modules/*/updates/dkms/knemlike.ko* >/dev/null 2>&1; then
	echo "FAIL: --uninstall left knemlike behind"
	status=1
else
	echo "ok: --uninstall removed it"
fi
exit $status
