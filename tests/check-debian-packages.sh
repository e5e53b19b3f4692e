#!/usr/bin/env bash
# The Debian packages (contrib/debian, built by contrib/build-debs.sh), in a Debian
# trixie chroot made from Debian's packages (tests/trixie-chroot.sh):
#  - dpkg-buildpackage builds knemlike-dkms, knemlike-dev and openmpi-mca-smx against
#    trixie's Open MPI 5.0.7; lintian reports no error and no warning that is not
#    overridden with its reason in contrib/debian/*.lintian-overrides; knemlike-dev holds
#    the uAPI header and knemlike.pc (and its docs), nothing else;
#  - smsc/knemlike's header check (its configure.m4, alone: tests/knemlike-configure),
#    while no header is installed: unasked, the component is left out (with a warning for
#    a header of another ABI version); --with-knemlike stops, naming where it looked;
#    --with-knemlike-uapi=DIR stops for a DIR without the header and for a header of
#    another ABI version (naming the file and both versions), passes for the tree's own;
#    a wrong option value is refused; the version expected is read from the tree's
#    header, or, for configure.m4 copied alone, from a copy beside it (none: it stops);
#  - apt installs the three from the .debs: knemlike-dev's header is the tree's, a program
#    built with $(pkg-config --cflags knemlike) prints the header's KNEMLIKE_ABI_VERSION,
#    equal to knemlike.pc's abi_version; the header check then finds the header, asked or
#    not, through pkg-config (a knemlike.pc pointing elsewhere is followed); DKMS builds
#    and installs the module for the kernel headers installed there (the chroot shares
#    the host's kernel: building is enough; the module is never loaded here), its license
#    and vermagic are right, the udev rule and modprobe.d options are in place; trixie's
#    ompi_info lists both components, and a login shell's mpirun (the package's
#    profile.d component path) runs the MPI suite's p2p and datatypes on --mca btl
#    smx,self;
#  - apt remove takes the module out of every kernel and DKMS, the components and the
#    header; apt purge the configuration files; afterwards the tree holds exactly the
#    files it held before the install, but for DKMS's own signing key (made by dkms at
#    its first build of any module, and dkms's to keep).
# Needs root. SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SMX_TOP/tests/trixie-chroot.sh"
trixie_chroot_make
root=$TRIXIE_ROOT

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
for deb in knemlike-dkms_0.1.0_all.deb knemlike-dev_0.1.0_all.deb openmpi-mca-smx_0.1.0_amd64.deb; do
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

echo "== knemlike-dev's files"
files=$(in_chroot 'dpkg-deb -c /tmp/debs/knemlike-dev_0.1.0_all.deb' | awk '{ print $NF }' |
	grep -v -e '/$' -e '^\./usr/share/doc/knemlike-dev/' || true)
[ "$files" = "./usr/include/linux/knemlike.h
./usr/share/pkgconfig/knemlike.pc" ] && echo "ok: knemlike-dev holds the header and knemlike.pc" ||
	fail "knemlike-dev holds, besides its docs: $files"

# smsc/knemlike's header check alone: its configure.m4 read by autoconf from the tree, or
# copied alone into a directory (as into an Open MPI tree), with a header beside it or not.
echo "== smsc/knemlike's configure check, no header installed"
abi=$(sed -n 's/^#define KNEMLIKE_ABI_VERSION[[:space:]]*\([0-9][0-9]*\).*/\1/p' \
	"$SMX_TOP/kmod/include/uapi/linux/knemlike.h")
[ -n "$abi" ] || { echo "FAIL: no KNEMLIKE_ABI_VERSION in the uapi header"; exit 1; }
other=$((abi + 1))
kc=$root/tmp/kc
mkdir -p "$kc/empty" "$kc/other/linux" "$kc/alone/opal/mca/smsc/knemlike" \
	"$kc/beside/opal/mca/smsc/knemlike"
sed "s/^#define KNEMLIKE_ABI_VERSION[[:space:]]*$abi\b/#define KNEMLIKE_ABI_VERSION $other/" \
	"$SMX_TOP/kmod/include/uapi/linux/knemlike.h" >"$kc/other/linux/knemlike.h"
grep -q "^#define KNEMLIKE_ABI_VERSION $other\b" "$kc/other/linux/knemlike.h" ||
	{ echo "FAIL: could not make a header of ABI $other"; exit 1; }
for d in alone beside; do
	cp "$SMX_TOP/opal/mca/smsc/knemlike/configure.m4" "$kc/$d/opal/mca/smsc/knemlike/"
done
cp "$kc/other/linux/knemlike.h" "$kc/beside/opal/mca/smsc/knemlike/knemlike.h"
[ ! -e "$root/usr/include/linux/knemlike.h" ] ||
	fail "the tree has a linux/knemlike.h before knemlike-dev is installed"
in_chroot 'cd /tmp/kc && cp /src/ompi-smx/tests/knemlike-configure/configure.ac . &&
	autoconf -I /src/ompi-smx -o configure && autoconf -I /tmp/kc/alone -o configure-alone &&
	autoconf -I /tmp/kc/beside -o configure-beside' >"$kc/autoconf.log" 2>&1 ||
	{ cat "$kc/autoconf.log"; echo "FAIL: autoconf of tests/knemlike-configure"; exit 1; }
# configure_case ok|error WHAT MESSAGE SCRIPT [ARG...]: /tmp/kc/SCRIPT ARGs in the tree must
# succeed (ok) or stop (error), with MESSAGE (a fixed string) in its output.
configure_case() {
	local want=$1 what=$2 msg=$3 out rc=0
	shift 3
	out=$(in_chroot "cd /tmp/kc && ./$*" 2>&1) || rc=$?
	if { [ "$want" = ok ] && [ "$rc" -ne 0 ]; } || { [ "$want" = error ] && [ "$rc" -eq 0 ]; }; then
		fail "configure: $what: exit status $rc"
	elif ! grep -qF -- "$msg" <<<"$out"; then
		fail "configure: $what: no '$msg' in its output"
	else
		echo "ok: configure: $what"
		return
	fi
	printf '%s\n' "$out" | tail -n 4 | sed 's/^/  | /'
}
uapi=/src/ompi-smx/kmod/include/uapi
configure_case ok "unasked, no header: the component is left out" \
	"smsc/knemlike: not built" configure
configure_case error "--with-knemlike, no header: stops, saying where it looked" \
	"error: --with-knemlike: linux/knemlike.h not found; looked at linux/knemlike.h in the compiler's include path" \
	configure --with-knemlike
configure_case error "--with-knemlike-uapi=DIR without the header: stops, naming the file" \
	"error: --with-knemlike-uapi=/tmp/kc/empty: linux/knemlike.h not found; looked at /tmp/kc/empty/linux/knemlike.h" \
	configure --with-knemlike-uapi=/tmp/kc/empty
configure_case error "--with-knemlike-uapi=DIR, a header of ABI $other: stops, naming it and both versions" \
	"error: --with-knemlike-uapi=/tmp/kc/other: /tmp/kc/other/linux/knemlike.h has KNEMLIKE_ABI_VERSION $other; smsc/knemlike is written for ABI $abi" \
	configure --with-knemlike-uapi=/tmp/kc/other
configure_case ok "unasked, a header of ABI $other in CPPFLAGS: left out, with a warning" \
	"WARNING: smsc/knemlike is not built: /tmp/kc/other/linux/knemlike.h has KNEMLIKE_ABI_VERSION $other" \
	configure CPPFLAGS=-I/tmp/kc/other
configure_case ok "--with-knemlike-uapi=the tree's own: built against it" \
	"smsc/knemlike: built, CPPFLAGS '-I$uapi'" configure --with-knemlike-uapi=$uapi
configure_case error "--with-knemlike=DIR is refused by name" \
	"error: --with-knemlike=/usr: it takes no directory" configure --with-knemlike=/usr
configure_case error "configure.m4 alone, no copy of the header beside it: stops, naming both places" \
	"error: --with-knemlike-uapi=$uapi: cannot tell which ABI version smsc/knemlike is written for: no KNEMLIKE_ABI_VERSION in /tmp/kc/alone/kmod/include/uapi/linux/knemlike.h (its ompi-smx tree) nor in /tmp/kc/alone/opal/mca/smsc/knemlike/knemlike.h" \
	configure-alone --with-knemlike-uapi=$uapi
configure_case error "configure.m4 alone, a header of ABI $other beside it: expects ABI $other" \
	"$uapi/linux/knemlike.h has KNEMLIKE_ABI_VERSION $abi; smsc/knemlike is written for ABI $other" \
	configure-beside --with-knemlike-uapi=$uapi

echo "== apt install"
in_chroot 'cd /tmp/debs && apt-get install -y -q ./knemlike-dkms_0.1.0_all.deb ./knemlike-dev_0.1.0_all.deb \
	./openmpi-mca-smx_0.1.0_amd64.deb' \
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

echo "== knemlike-dev: a program built against it; the header check finds it"
cmp -s "$root/usr/include/linux/knemlike.h" "$SMX_TOP/kmod/include/uapi/linux/knemlike.h" &&
	echo "ok: /usr/include/linux/knemlike.h is the tree's uAPI header" ||
	fail "/usr/include/linux/knemlike.h is not the tree's kmod/include/uapi/linux/knemlike.h"
printf '%s\n' '#include <stdio.h>' '#include <linux/knemlike.h>' \
	'int main(void) { printf("%u\n", (unsigned int) KNEMLIKE_ABI_VERSION); return 0; }' >"$kc/abi.c"
pc_abi=$(in_chroot 'pkg-config --variable=abi_version knemlike' 2>&1) ||
	fail "pkg-config knows no knemlike: $pc_abi"
prog_abi=$(in_chroot 'cd /tmp/kc && cc -Wall -Werror $(pkg-config --cflags knemlike) -o abi abi.c && ./abi' 2>&1) ||
	fail "a program including <linux/knemlike.h> did not build or run: $prog_abi"
[ "$prog_abi" = "$pc_abi" ] && [ "$pc_abi" = "$abi" ] &&
	echo "ok: a program built with \$(pkg-config --cflags knemlike) prints ABI $prog_abi, knemlike.pc's abi_version" ||
	fail "the program prints ABI '$prog_abi', knemlike.pc says '$pc_abi', the tree's header $abi"
cflags=$(in_chroot 'PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 pkg-config --cflags knemlike' | sed 's/ *$//')
[ "$cflags" = "-I/usr/include" ] && echo "ok: knemlike.pc's Cflags: $cflags" ||
	fail "knemlike.pc's Cflags are '$cflags', not -I/usr/include"
mkdir -p "$kc/pc"
sed 's|^includedir=.*|includedir=/tmp/kc/other|' "$root/usr/share/pkgconfig/knemlike.pc" >"$kc/pc/knemlike.pc"
configure_case ok "--with-knemlike, knemlike-dev installed: built against /usr/include/linux/knemlike.h" \
	"checking for linux/knemlike.h... /usr/include/linux/knemlike.h" configure --with-knemlike
configure_case ok "unasked, knemlike-dev installed: built" "smsc/knemlike: built" configure
configure_case error "--with-knemlike follows pkg-config: a knemlike.pc pointing at a header of ABI $other" \
	"/tmp/kc/other/linux/knemlike.h has KNEMLIKE_ABI_VERSION $other" \
	configure --with-knemlike PKG_CONFIG_PATH=/tmp/kc/pc

# (the suite's programs, and any cache a user's job may write, go under /tmp here,
# outside the purge check: a user's files, not the packages')
in_chroot 'bash -lc "cd /src/ompi-smx && MPICC=mpicc.openmpi SMX_BUILD=/tmp/suite \
	XDG_CACHE_HOME=/tmp/suite/cache tests/mpi/run-suite --quick --only p2p --only datatypes \
	--np 2 --label \"packaged smx\" --mca btl smx,self"' || fail "the packaged components did not run the MPI suite's p2p and datatypes"

echo "== apt remove, then purge"
in_chroot 'apt-get remove -y -q knemlike-dkms knemlike-dev openmpi-mca-smx' >"$root/tmp/remove.log" 2>&1 ||
	{ tail -n 20 "$root/tmp/remove.log"; fail "apt-get remove"; }
left=$(in_chroot 'ls /lib/modules/*/updates/dkms/knemlike.ko* /usr/src/knemlike-* /var/lib/dkms/knemlike \
	/usr/lib/*/openmpi/lib/*/mca_btl_smx.so /usr/lib/*/openmpi/lib/*/mca_smsc_knemlike.so \
	/usr/include/linux/knemlike.h /usr/share/pkgconfig/knemlike.pc 2>/dev/null' || true)
[ -z "$left" ] && echo "ok: removed: no module, no DKMS tree, no component, no header" ||
	fail "left after remove: $left"
[ -f "$root/etc/modprobe.d/knemlike.conf" ] && echo "ok: remove keeps the configuration files" ||
	fail "remove took the configuration files (purge is for that)"
# (knemlike-dev has no configuration file: remove took all of it, and apt knows it no more)
in_chroot 'apt-get purge -y -q knemlike-dkms openmpi-mca-smx' >"$root/tmp/purge.log" 2>&1 ||
	{ tail -n 20 "$root/tmp/purge.log"; fail "apt-get purge"; }
pkgs=$(in_chroot "dpkg-query -W -f='\${db:Status-Abbrev} \${Package}\n' knemlike-dkms knemlike-dev openmpi-mca-smx 2>/dev/null | grep -v '^un'" || true)
[ -z "$pkgs" ] && echo "ok: dpkg knows none of the packages any more" || fail "dpkg still lists: $pkgs"
snapshot >"$root/tmp/files.after"
diff=$(diff "$root/tmp/files.before" "$root/tmp/files.after" | grep '^[<>]' |
	grep -vxE '> /var/lib/dkms/mok\.(key|pub)' || true)
[ -z "$diff" ] && echo "ok: after purge the tree holds what it held before (but DKMS's signing key)" ||
	fail "after purge the tree differs from before the install: $diff"
exit $status
