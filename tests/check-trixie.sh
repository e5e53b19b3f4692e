#!/usr/bin/env bash
# The project on a distribution's Open MPI 5, as a user on Debian trixie gets it: in a
# trixie chroot made here from Debian's packages (tests/trixie-chroot.sh: debootstrap, the
# tree cached as a tarball under $SMX_CACHE/trixie) with openmpi-bin and libopenmpi-dev
# (5.0.7) installed and nothing of the host's Open MPI:
#  - contrib/setup.sh --no-vm --no-other-mpis installs what it needs (among it Debian's
#    MPICH, which may take the alternatives' mpicc and mpirun), finds the system's Open MPI
#    and uses it, building none: the three headers libopenmpi-dev lacks come from the same
#    version's Debian source package, configure takes the distribution's layout (headers
#    and libraries under /usr/lib/<triplet>/openmpi, its PMIx's headers elsewhere), the
#    components go where that Open MPI looks (ompi_info --path pkglibdir), mpi4py is built
#    against it;
#  - with the alternatives' mpicc and mpirun pointed at MPICH, after . contrib/env.sh
#    mpicc, mpirun and ompi_info are Open MPI's, and its ompi_info lists both components
#    with their parameters;
#  - make check's ompi_info and mpi4py tests pass (mpi4py: stock sm + cma against smx + cma
#    at 2 ranks, SMX_MPI4PY_QUICK), and the MPI suite at 2 and 4 ranks on
#    --mca btl smx,self with that mpirun (every byte checked; only smx can carry the
#    traffic), leaving nothing in /dev/shm.
# Between runs the tree's apt archives and setup's cache are kept under $SMX_CACHE/trixie.
# Needs root (chroot, mounts). SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SMX_TOP/tests/trixie-chroot.sh"
trixie_chroot_make
root=$TRIXIE_ROOT
trixie_keep /var/cache/apt/archives apt-archives
trixie_keep /root/.cache/smx setup-cache

v=$(in_chroot 'ompi_info -V' 2>/dev/null | sed -n 's/^Open MPI v\([0-9.]*\).*/\1/p')
echo "trixie's Open MPI: ${v:-none}"
case $v in
5.*) ;;
*) echo "FAIL: trixie's openmpi-bin is not Open MPI 5 (${v:-no ompi_info})"; exit 1 ;;
esac

# Our source tree, as it is checked out (no build directory, no generated files).
smx_copy_source "$root/src/ompi-smx"


echo "== contrib/setup.sh --no-vm --no-other-mpis in the trixie tree"
start=$SECONDS
if ! in_chroot 'cd /src/ompi-smx && contrib/setup.sh --no-vm --no-other-mpis' \
	>"$root/tmp/setup.log" 2>&1; then
	grep -v '^  ' "$root/tmp/setup.log" | tail -n 40
	for log in build/setup-configure.log build/setup-make.log build/setup-install.log; do
		[ ! -s "$root/src/ompi-smx/$log" ] || { echo "--- $log"; tail -n 15 "$root/src/ompi-smx/$log"; }
	done
	echo "FAIL: contrib/setup.sh failed in the trixie tree"
	exit 1
fi
echo "setup took $((SECONDS - start)) s:"
grep -E 'Open MPI|components installed|mpi4py|not using' "$root/tmp/setup.log" | sed 's/^/  /'
grep -q "Open MPI $v: using the system's, in /usr" "$root/tmp/setup.log" &&
	echo "ok: setup uses the system's Open MPI $v" ||
	fail "setup did not say it uses the system's Open MPI in /usr"
built=$(ls -d "$root"/root/.cache/smx/openmpi-*/prefix 2>/dev/null || true)
[ -z "$built" ] && echo "ok: setup built no Open MPI" || fail "setup built an Open MPI: $built"

# What setup's environment gives a user: Open MPI's commands whatever the alternatives say.
# Debian's picks Open MPI's over MPICH's on amd64; a user may have chosen MPICH's.
in_chroot 'update-alternatives --set mpi /usr/bin/mpicc.mpich &&
	update-alternatives --set mpirun /usr/bin/mpirun.mpich' >/dev/null ||
	fail "could not point the alternatives' mpicc and mpirun at MPICH"
env_out=$(in_chroot 'cd /src/ompi-smx && . contrib/env.sh && echo "prefix=$SMX_OMPI_PREFIX" &&
	echo "mpirun=$(readlink -f "$(command -v mpirun)")" &&
	echo "mpicc=$(mpicc --showme:version 2>&1 | head -n 1)" &&
	echo "alternative=$(readlink -f /usr/bin/mpirun)" &&
	echo "mpich=$(readlink -f /usr/bin/mpirun.mpich)"' 2>&1) || true
sed 's/^/  /' <<<"$env_out"
[ "$(sed -n 's/^alternative=//p' <<<"$env_out")" = "$(sed -n 's/^mpich=//p' <<<"$env_out")" ] ||
	fail "the alternatives' mpirun is not MPICH's: the check below proves nothing"
grep -qx 'prefix=/usr' <<<"$env_out" || fail "env.sh does not name /usr's Open MPI"
grep -q '^mpirun=/usr/bin/prterun$\|^mpirun=/usr/bin/mpirun.openmpi$' <<<"$env_out" ||
	fail "env.sh's mpirun is not Open MPI's"
grep -q '^mpicc=.*Open MPI' <<<"$env_out" || fail "env.sh's mpicc is not Open MPI's"

pkglibdir=$(in_chroot 'ompi_info --path pkglibdir --parsable' | sed -n 's/^path:pkglibdir://p')
for so in mca_btl_smx.so mca_smsc_knemlike.so; do
	[ -f "$root$pkglibdir/$so" ] && echo "ok: $so installed in $pkglibdir" ||
		fail "$so is not in trixie's component directory $pkglibdir"
done
info=$(in_chroot 'cd /src/ompi-smx && . contrib/env.sh && ompi_info &&
	ompi_info --param btl smx --level 9 && ompi_info --param smsc knemlike --level 9' 2>&1 | tr -d '\000')
for want in 'MCA btl: smx' 'MCA smsc: knemlike' 'btl_smx_eager_limit' 'smsc_knemlike_attach_max'; do
	grep -q "$want" <<<"$info" && echo "ok: ompi_info shows '$want'" ||
		fail "trixie's ompi_info does not show '$want'"
done

echo "== make check: ompi_info and mpi4py"
if in_chroot 'cd /src/ompi-smx && . contrib/env.sh &&
	SMX_MPI4PY_QUICK=1 make -C build check TESTS="tests/check-ompi-info.sh tests/check-mpi4py.sh"' \
	>"$root/tmp/check.log" 2>&1; then
	grep -E '^(PASS|FAIL|ERROR|SKIP|XFAIL|XPASS):' "$root/tmp/check.log" | sed 's/^/  /'
	echo "ok: make check's ompi_info and mpi4py tests pass"
else
	tail -n 20 "$root/tmp/check.log"
	for t in check-ompi-info check-mpi4py; do
		[ ! -s "$root/src/ompi-smx/build/tests/$t.log" ] ||
			{ echo "--- $t.log"; tr -d '\000' <"$root/src/ompi-smx/build/tests/$t.log" | tail -n 25; }
	done
	fail "make check's ompi_info or mpi4py test on trixie's Open MPI"
fi

for np in 2 4; do
	in_chroot "cd /src/ompi-smx && . contrib/env.sh &&
		tests/mpi/run-suite --quick --np $np --label 'trixie btl smx,self np=$np' --mca btl smx,self" ||
		fail "the MPI suite on trixie's Open MPI at $np ranks"
done
left=$(ls -A "$root/dev/shm")
[ -z "$left" ] && echo "ok: nothing left in /dev/shm" || fail "left in /dev/shm: $left"
exit $status
