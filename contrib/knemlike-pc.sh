#!/bin/sh
# contrib/knemlike-pc.sh TEMPLATE HEADER PREFIX INCLUDEDIR VERSION: print knemlike.pc, made
# from TEMPLATE (contrib/knemlike.pc.in) with its prefix, includedir and version filled in
# and abi_version read from HEADER (the uAPI header's KNEMLIKE_ABI_VERSION). Used by
# Makefile.am (make install-knemlike-dev, Debian's knemlike-dev) and by the RPM spec
# (contrib/rpm/knemlike.spec, knemlike-devel), which builds without configure.
# SPDX-License-Identifier: BSD-3-Clause
set -eu
if [ $# -ne 5 ]; then
	echo "usage: knemlike-pc.sh TEMPLATE HEADER PREFIX INCLUDEDIR VERSION" >&2
	exit 2
fi
template=$1 header=$2 prefix=$3 includedir=$4 version=$5
[ -f "$template" ] || { echo "knemlike-pc.sh: no template $template" >&2; exit 1; }
[ -f "$header" ] || { echo "knemlike-pc.sh: no header $header" >&2; exit 1; }
abi=$(sed -n 's/^#define KNEMLIKE_ABI_VERSION[[:space:]]*\([0-9][0-9]*\).*/\1/p' "$header")
[ -n "$abi" ] || { echo "knemlike-pc.sh: $header: no KNEMLIKE_ABI_VERSION" >&2; exit 1; }
sed -e "s|@prefix@|$prefix|" -e "s|@includedir@|$includedir|" \
	-e "s|@VERSION@|$version|" -e "s|@KNEMLIKE_ABI_VERSION@|$abi|" "$template"
