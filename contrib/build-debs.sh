#!/usr/bin/env bash
# contrib/build-debs.sh: build the Debian packages knemlike-dkms (the module's source for
# DKMS, its udev rule and modprobe.d options), knemlike-dev (its uAPI header and
# knemlike.pc) and openmpi-mca-smx (btl/smx and smsc/knemlike for the distribution's Open
# MPI 5) with dpkg-buildpackage, on a Debian system with libopenmpi-dev >= 5 and the
# Build-Depends of contrib/debian/control.
#
#   --out=DIR              where the .deb files go (default: build/debs)
#   --missing-headers=DIR  a directory holding opal/mca/threads/pthreads/threads_pthreads*.h
#                          from the source of the installed Open MPI's version (default:
#                          taken from Debian's openmpi source package of that version,
#                          downloaded once into ~/.cache/smx)
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$SMX_TOP/build/debs
headers=
for arg in "$@"; do
	case $arg in
	--out=*) out=${arg#*=} ;;
	--missing-headers=*) headers=${arg#*=} ;;
	-h | --help) sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) smx_die "unknown option '$arg' (see --help)" ;;
	esac
done
command -v dpkg-buildpackage >/dev/null || smx_die "dpkg-buildpackage is not installed (apt-get install dpkg-dev debhelper dh-dkms)"
v=$(ompi_info -V 2>/dev/null | sed -n 's/^Open MPI v\([0-9.]*\).*/\1/p') || true
[ -n "$v" ] || smx_die "no Open MPI found (ompi_info): install the distribution's openmpi-bin and libopenmpi-dev"
[ "${v%%.*}" -ge 5 ] || smx_die "the installed Open MPI is $v; the components need >= 5.0"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$headers" ]; then
	[ "$v" = "$SMX_OMPI_VERSION" ] ||
		smx_die "Open MPI $v is installed, and the headers its devel package lacks are taken from $SMX_OMPI_VERSION's source only: pass --missing-headers=DIR"
	headers=$work/missing-headers
	smx_ompi_missing_headers "$headers" || smx_die "could not take the missing headers from Open MPI $v's source"
fi
[ -f "$headers/opal/mca/threads/pthreads/threads_pthreads.h" ] ||
	smx_die "--missing-headers=$headers: no opal/mca/threads/pthreads/threads_pthreads.h there"
headers=$(cd "$headers" && pwd)

version=$(dpkg-parsechangelog -l "$SMX_TOP/contrib/debian/changelog" -S Version)
src=$work/ompi-smx-$version
smx_copy_source "$src"
cp -r "$SMX_TOP/contrib/debian" "$src/debian"
smx_log "dpkg-buildpackage in $src (log: $out/build.log)"
mkdir -p "$out"
if ! (cd "$src" && OMPI_MISSING_HEADERS=$headers dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
	tail -n 30 "$out/build.log" >&2
	smx_die "dpkg-buildpackage failed (log: $out/build.log)"
fi
mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out/"
smx_log "built: $(cd "$out" && ls -- *.deb | tr '\n' ' ')"
