#!/usr/bin/env bash
# The Debian packages (contrib/debian, built by contrib/build-debs.sh), in a Debian
# trixie chroot made from Debian's packages (tests/trixie-chroot.sh):
#  - dpkg-buildpackage builds knemlike-dkms and openmpi-mca-smx against trixie's Open MPI
#    5.0.7; lintian reports no error and no warning that is not overridden with its
#    reason in contrib/debian/*.lintian-overrides;
#  - apt installs both from the .debs: DKMS builds and installs the module for the kernel
#    headers installed there (the chroot shares the host's kernel: building is enough;
#    the module is never loaded here), its license and vermagic are right, the udev rule
#    and modprobe.d options are in place; trixie's ompi_info lists both components, and
#    a login shell's mpirun (the package's profile.d component path) runs the MPI suite's
#    p2p and datatypes on --mca btl smx,self;
#  - apt remove takes the module out of every kernel and DKMS, and the components; apt
#    purge the configuration files; afterwards the tree holds exactly the files it held
#    before the install, but for DKMS's own signing key (made by dkms at its first build
#    of any module, and dkms's to keep).
# Needs root. SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=${SMX_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top/tests/trixie-chroot.sh"
trixie_chroot_make
root=$TRIXIE_ROOT
status=0
fail() { echo "FAIL: $*"; status=1; }

smx_ompi_missing_headers "$root/opt/ompi-missing-headers" ||
	{ echo "FAIL: could not take the missing headers from Open MPI $SMX_OMPI_VERSION's source"; exit 1; }
smx_copy_source "$root/src/ompi-smx"

# Every file of the tree but the volatile ones (apt's and dpkg's own records, logs, and
# the directories this test works in).
snapshot() {
	in_chroot 'find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp \
		-o -path /src -o -path /opt -o -path /var/log -o -path /var/cache \
		-o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /run \) -prune -o -print | sort'
}
snapshot >"$root/tmp/files.before"

echo "== dpkg-buildpackage"
if ! in_chroot 'cd /src/ompi-smx && contrib/build-debs.sh --out=/tmp/debs \
	--missing-headers=/opt/ompi-missing-headers'; then
	echo "FAIL: the packages did not build"
	exit 1
fi
for deb in knemlike-dkms_0.1.0_all.deb openmpi-mca-smx_0.1.0_amd64.deb; do
	[ -f "$root/tmp/debs/$deb" ] && echo "ok: built $deb" || fail "$deb was not built"
done

echo "== lintian"
lint=$(in_chroot 'cd /tmp/debs && lintian --info --display-level ">=warning" --show-overrides *.changes' 2>&1 || true)
printf '%s\n' "$lint" | sed 's/^/  | /'
if grep -qE '^[EW]: ' <<<"$lint"; then
	fail "lintian: errors or warnings not overridden (with a reason) in contrib/debian/*.lintian-overrides"
else
	echo "ok: lintian: no error, no warning that is not overridden"
fi

echo "== apt install"
in_chroot 'cd /tmp/debs && apt-get install -y -q ./knemlike-dkms_0.1.0_all.deb ./openmpi-mca-smx_0.1.0_amd64.deb' \
	>"$root/tmp/install.log" 2>&1 || { tail -n 30 "$root/tmp/install.log"; fail "apt-get install of the .debs"; }
kernels=$(in_chroot 'for b in /lib/modules/*/build; do [ -f "$b/Makefile" ] && basename "$(dirname "$b")"; done')
[ -n "$kernels" ] || fail "no kernel headers in the chroot: nothing for DKMS to build against"
dkms=$(in_chroot 'dkms status knemlike')
echo "dkms status: $dkms"
for k in $kernels; do
	grep -q "knemlike/0.1.0, $k, x86_64: installed" <<<"$dkms" ||
		fail "DKMS did not build and install knemlike for $k"
	ko=$(in_chroot "ls /lib/modules/$k/updates/dkms/knemlike.ko* 2>/dev/null")
	if [ -z "$ko" ]; then
		fail "no knemlike.ko in /lib/modules/$k/updates/dkms"
		continue
	fi
	info=$(in_chroot "modinfo -F license $ko; modinfo -F vermagic $ko")
	grep -qx 'Dual BSD/GPL' <<<"$info" && grep -q "^$k " <<<"$info" &&
		echo "ok: $ko: Dual BSD/GPL, vermagic $k" ||
		fail "$ko: license or vermagic wrong: $info"
done
for f in /usr/lib/udev/rules.d/99-knemlike.rules /etc/modprobe.d/knemlike.conf \
	/etc/profile.d/openmpi-mca-smx.sh; do
	[ -f "$root$f" ] && echo "ok: $f installed" || fail "$f is not installed"
done
info=$(in_chroot 'ompi_info' 2>&1 | tr -d '\000')
for want in 'MCA btl: smx' 'MCA smsc: knemlike'; do
	grep -q "$want" <<<"$info" && echo "ok: ompi_info shows '$want'" || fail "ompi_info does not show '$want'"
done
in_chroot 'bash -lc "cd /src/ompi-smx && MPICC=mpicc.openmpi SMX_BUILD=/tmp/suite \
	tests/mpi/run-suite --quick --only p2p --only datatypes --np 2 --label \"packaged smx\" \
	--mca btl smx,self"' || fail "the packaged components did not run the MPI suite's p2p and datatypes"

echo "== apt remove, then purge"
in_chroot 'apt-get remove -y -q knemlike-dkms openmpi-mca-smx' >"$root/tmp/remove.log" 2>&1 ||
	{ tail -n 20 "$root/tmp/remove.log"; fail "apt-get remove"; }
left=$(in_chroot 'ls /lib/modules/*/updates/dkms/knemlike.ko* /usr/src/knemlike-* /var/lib/dkms/knemlike \
	/usr/lib/*/openmpi/lib/*/mca_btl_smx.so /usr/lib/*/openmpi/lib/*/mca_smsc_knemlike.so 2>/dev/null' || true)
[ -z "$left" ] && echo "ok: removed: no module, no DKMS tree, no component" || fail "left after remove: $left"
[ -f "$root/etc/modprobe.d/knemlike.conf" ] && echo "ok: remove keeps the configuration files" ||
	fail "remove took the configuration files (purge is for that)"
in_chroot 'apt-get purge -y -q knemlike-dkms openmpi-mca-smx' >"$root/tmp/purge.log" 2>&1 ||
	{ tail -n 20 "$root/tmp/purge.log"; fail "apt-get purge"; }
pkgs=$(in_chroot "dpkg-query -W -f='\${db:Status-Abbrev} \${Package}\n' knemlike-dkms openmpi-mca-smx 2>/dev/null | grep -v '^un'" || true)
[ -z "$pkgs" ] && echo "ok: dpkg knows neither package any more" || fail "dpkg still lists: $pkgs"
snapshot >"$root/tmp/files.after"
diff=$(diff "$root/tmp/files.before" "$root/tmp/files.after" | grep '^[<>]' |
	grep -vxE '> /var/lib/dkms/mok\.(key|pub)' || true)
[ -z "$diff" ] && echo "ok: after purge the tree holds what it held before (but DKMS's signing key)" ||
	fail "after purge the tree differs from before the install: $diff"
exit $status
