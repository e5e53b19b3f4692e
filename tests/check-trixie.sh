#!/usr/bin/env bash
# Our components against a distribution's Open MPI 5: Debian trixie's openmpi-bin and
# libopenmpi-dev (5.0.7), in a trixie chroot made here from Debian's packages
# (tests/trixie-chroot.sh: debootstrap, the finished tree cached as a tarball under
# $SMX_CACHE/trixie). In the chroot, with nothing of the host's Open MPI:
#  - configure --with-ompi=/usr takes the distribution's layout (headers and libraries
#    under /usr/lib/<triplet>/openmpi, its PMIx's headers elsewhere), with the three
#    headers libopenmpi-dev lacks from the same version's Debian source package;
#  - make install puts both components where that Open MPI looks (ompi_info --path
#    pkglibdir), and its ompi_info lists them with their parameters;
#  - the MPI suite passes at 2 and 4 ranks on --mca btl smx,self with the distribution's
#    mpirun and mpicc (every byte checked; only smx can carry the traffic), with the
#    component path the README gives for Debian, and leaves nothing in /dev/shm.
# Needs root (chroot, mounts). SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=${SMX_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top/tests/trixie-chroot.sh"
trixie_chroot_make
root=$TRIXIE_ROOT

# The same version as the source package we take the missing headers from.
v=$(in_chroot 'ompi_info -V' 2>/dev/null | sed -n 's/^Open MPI v\([0-9.]*\).*/\1/p')
echo "trixie's Open MPI: ${v:-none}"
[ "$v" = "$SMX_OMPI_VERSION" ] || {
	echo "FAIL: trixie ships Open MPI ${v:-<none>}, the headers it lacks come from $SMX_OMPI_VERSION's source"
	exit 1
}
smx_ompi_missing_headers "$root/opt/ompi-missing-headers" ||
	{ echo "FAIL: could not take the missing headers from Open MPI $SMX_OMPI_VERSION's source"; exit 1; }

# Our source tree, as it is checked out (no build directory, no generated files).
smx_copy_source "$root/src/ompi-smx"

status=0
fail() { echo "FAIL: $*"; status=1; }

echo "== build against /usr (the distribution's Open MPI)"
if ! in_chroot 'set -e; cd /src/ompi-smx; autoreconf -fi >/tmp/autoreconf.log 2>&1;
	mkdir -p build; cd build;
	../configure --with-ompi=/usr --with-ompi-missing-headers=/opt/ompi-missing-headers \
		--with-kernel-build=no >/tmp/configure.log 2>&1;
	make -j"$(nproc)" >/tmp/make.log 2>&1; make install >/tmp/install.log 2>&1'; then
	for log in autoreconf configure make install; do
		[ ! -s "$root/tmp/$log.log" ] || { echo "--- $log.log"; tail -n 15 "$root/tmp/$log.log"; }
	done
	echo "FAIL: the build against trixie's Open MPI failed"
	exit 1
fi
sed -n '/^  Open MPI:/,/^  kernel/p' "$root/tmp/configure.log"
pkglibdir=$(in_chroot 'ompi_info --path pkglibdir --parsable' | sed -n 's/^path:pkglibdir://p')
for so in mca_btl_smx.so mca_smsc_knemlike.so; do
	[ -f "$root$pkglibdir/$so" ] && echo "ok: $so installed in $pkglibdir" ||
		fail "$so is not in trixie's component directory $pkglibdir"
done
info=$(in_chroot 'ompi_info; ompi_info --param btl smx --level 9; ompi_info --param smsc knemlike --level 9' 2>&1 | tr -d '\000')
for want in 'MCA btl: smx' 'MCA smsc: knemlike' 'btl_smx_eager_limit' 'smsc_knemlike_attach_max'; do
	grep -q "$want" <<<"$info" && echo "ok: ompi_info shows '$want'" ||
		fail "trixie's ompi_info does not show '$want'"
done

# Debian's prterun hands every process its PMIx's component directory as Open MPI's
# mca_base_component_path (both projects call the parameter that): a component outside
# libmpi is found only where the path names its directory. The README's recipe: both
# paths, each for its own library.
pmixdir=$(in_chroot 'echo "$(pkg-config --variable=libdir pmix)/pmix"')
fix="export OMPI_MCA_mca_base_component_path=$pkglibdir PMIX_MCA_mca_base_component_path=$pmixdir"
echo "component path: $fix"
for np in 2 4; do
	# shellcheck disable=SC2016
	in_chroot "$fix; export MPICC=mpicc.openmpi SMX_BUILD=/src/ompi-smx/build;
		cd /src/ompi-smx && tests/mpi/run-suite --quick --np $np --label 'trixie btl smx,self np=$np' \
		--mca btl smx,self" || fail "the MPI suite on trixie's Open MPI at $np ranks"
done
left=$(ls -A "$root/dev/shm")
[ -z "$left" ] && echo "ok: nothing left in /dev/shm" || fail "left in /dev/shm: $left"
exit $status
