#!/usr/bin/env bash
# contrib/dkms/install.sh: register knemlike with DKMS and build and install it for every
# installed kernel that has its headers. Run as root. Afterwards: modprobe knemlike.
#   --uninstall   remove it from DKMS again
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
name=knemlike
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/contrib/dkms/dkms.conf")
src=/usr/src/$name-$version

command -v dkms >/dev/null || { echo "install.sh: dkms is not installed (apt-get install dkms)" >&2; exit 1; }
if [ "${1:-}" = --uninstall ]; then
	dkms remove "$name/$version" --all || true
	rm -rf "$src"
	exit 0
fi
rm -rf "$src"
mkdir -p "$src"
cp -r "$top/kmod/." "$src/"
cp "$top/contrib/dkms/dkms.conf" "$src/dkms.conf"
dkms remove "$name/$version" --all >/dev/null 2>&1 || true
dkms add "$name/$version"
for headers in /lib/modules/*/build; do
	[ -f "$headers/Makefile" ] || continue
	release=$(basename "$(dirname "$headers")")
	dkms build "$name/$version" -k "$release"
	dkms install "$name/$version" -k "$release"
done
dkms status "$name"
