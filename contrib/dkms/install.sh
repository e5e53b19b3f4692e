#!/usr/bin/env bash
# contrib/dkms/install.sh: register knemlike with DKMS and build and install it for every
# installed kernel that has its headers. Run as root. Afterwards: modprobe knemlike.
#   --uninstall   remove it from DKMS again
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
SMX_TOP=$(cd "$(dirname "$0")/../.." && pwd)
name=knemlike
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$SMX_TOP/contrib/dkms/dkms.conf")
src=/usr/src/$name-$version

uninstall=0
case $# in
0) ;;
1) case $1 in
	--uninstall) uninstall=1 ;;
	-h | --help) sed -n '2,4s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "install.sh: unknown option '$1' (usage: install.sh [--uninstall])" >&2; exit 2 ;;
	esac ;;
*) echo "install.sh: one option at most (usage: install.sh [--uninstall])" >&2; exit 2 ;;
esac
command -v dkms >/dev/null || { echo "install.sh: dkms is not installed (apt-get install dkms)" >&2; exit 1; }
if [ "$uninstall" = 1 ]; then
	dkms remove "$name/$version" --all || true
	rm -rf "$src"
	exit 0
fi
rm -rf "$src"
mkdir -p "$src"
cp -r "$SMX_TOP/kmod/." "$src/"
cp "$SMX_TOP/contrib/dkms/dkms.conf" "$src/dkms.conf"
dkms remove "$name/$version" --all >/dev/null 2>&1 || true
dkms add "$name/$version"
for headers in /lib/modules/*/build; do
	[ -f "$headers/Makefile" ] || continue
	release=$(basename "$(dirname "$headers")")
	dkms build "$name/$version" -k "$release"
	dkms install "$name/$version" -k "$release"
done
dkms status "$name"
