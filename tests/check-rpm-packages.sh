#!/usr/bin/env bash
# The RPM packages for RHEL-family nodes (contrib/rpm, built by contrib/build-rpms.sh), on
# this Debian machine, where no RHEL userland is reachable:
#  - contrib/build-rpms.sh makes the release tarball with make dist and builds from it
#    knemlike-dkms, knemlike-devel (noarch) and ompi-smx-openmpi (against the Open MPI
#    setup chose) with their source RPMs, signed with a key made for this run (its %check,
#    the unit tests, left to make check's first test); the
#    tarball carries what the specs use and no build product; rpm checks every signature;
#  - build-rpms.sh refuses an unknown option, an Open MPI, tarball or headers directory
#    that is not one, a bad package name; ompi-smx.spec (rpmbuild by hand) stops where
#    there is no Open MPI and where its component directory is not the one asked for,
#    naming the --define that fixes it;
#  - rpmlint reports no error, and every warning it reports is explained in the spec of
#    its package (a comment "rpmlint: NAME: why"), and every warning explained there is
#    still reported (no stale explanation);
#  - each package holds exactly the files it should (the module's source as kmod/ has it,
#    dkms.conf of the package's version, the udev rule, the modprobe.d options as a
#    configuration file; the header and knemlike.pc; the two components and their help
#    files in the Open MPI's directories); ompi-smx-openmpi requires that Open MPI's
#    package at its version and no private library of it, provides no plugin as a
#    library, and its components carry no run path;
#  - rpm --root installs the three into an empty directory, with --nodeps (dkms,
#    kernel-headers, openmpi and the C library are RHEL packages, not reachable here)
#    and --noscripts (an empty root has no shell to run them in); rpm then verifies
#    every file; a program built against the installed header prints the ABI version
#    that the installed knemlike.pc gives; the Open MPI loads the installed components
#    from there alone (ompi_info, and the MPI suite's p2p at 2 ranks on btl smx,self);
#  - knemlike-dkms's scriptlets, with this machine's dkms and kernel headers, in a root
#    that is an overlay of this machine's (in a mount namespace: nothing written reaches
#    it): rpm -i registers, builds and installs the module for every kernel with headers,
#    rpm -U --replacepkgs of the same version leaves it installed, rpm -e takes it out of
#    every kernel and DKMS and leaves no file named knemlike;
#  - DKMS builds the module from the installed /usr/src/knemlike-VERSION (its own
#    dkms.conf) against Debian's 6.1 headers (DKMS's trees in this test's directory),
#    a Dual BSD/GPL module for that kernel, which the QEMU guest (6.1) loads: the
#    device appears, the loaded module is that one (its build ID), kmod_ops passes, and
#    it unloads.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SMX_TOP/contrib/lib.sh"

for tool in rpmbuild rpmlint rpmsign rpm2cpio gpg dkms; do
	command -v "$tool" >/dev/null ||
		{ echo "FAIL: $tool is not installed (contrib/setup.sh installs rpm, rpmlint and dkms)"; exit 1; }
done
[ -n "${SMX_OMPI_PREFIX:-}" ] || { echo "FAIL: SMX_OMPI_PREFIX is not set (. contrib/env.sh)"; exit 1; }
ompi_version=$(smx_ompi_version "$SMX_OMPI_PREFIX")
pkglibdir=$(smx_ompi_path "$SMX_OMPI_PREFIX" pkglibdir)
helpdir=$(smx_ompi_path "$SMX_OMPI_PREFIX" pkgdatadir)
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$SMX_TOP/contrib/dkms/dkms.conf")
# (under the build tree, which the guest shares: it reads the module from here)
work=$SMX_BUILD/rpm-test
rm -rf "$work"
mkdir -p "$work"
# (GnuPG's agent puts its socket in its home: a short path, whatever the checkout's)
export GNUPGHOME
GNUPGHOME=$(mktemp -d /tmp/smx-gpg.XXXXXX)
trap 'gpgconf --kill gpg-agent 2>/dev/null; rm -rf "$work" "$GNUPGHOME"' EXIT

echo "== a signing key for this run"
gpg --batch -q --passphrase '' --quick-gen-key 'ompi-smx test key (check-rpm-packages) <test@invalid>' \
	rsa3072 sign never 2>"$work/gpg.log" || { cat "$work/gpg.log"; echo "FAIL: gpg could not make a key"; exit 1; }
key=$(gpg --batch --with-colons --list-keys 2>/dev/null | awk -F: '$1 == "fpr" { print $10; exit }')
gpg --batch --armor --export "$key" >"$work/key.asc"

echo "== contrib/build-rpms.sh"
if ! "$SMX_TOP/contrib/build-rpms.sh" --out="$work/rpms" --sign="$key" --no-check >"$work/built" 2>"$work/build.log"; then
	cat "$work/build.log"
	echo "FAIL: contrib/build-rpms.sh failed"
	exit 1
fi
rpms="knemlike-dkms-$version-1.noarch.rpm knemlike-devel-$version-1.noarch.rpm
ompi-smx-openmpi-$version-1.x86_64.rpm knemlike-$version-1.src.rpm ompi-smx-$version-1.src.rpm"
[ "$(sort "$work/built")" = "$(for r in $rpms; do echo "$work/rpms/$r"; done | sort)" ] &&
	echo "ok: it printed the paths of the five RPMs it made" ||
	fail "it printed $(tr '\n' ' ' <"$work/built"), not the five RPMs of version $version"
cd "$work/rpms"
for r in $rpms; do
	[ -f "$r" ] || { echo "FAIL: $r was not built"; exit 1; }
done
tarball=ompi-smx-$version.tar.gz
listing=$(tar -tzf "$tarball")
for f in contrib/rpm/knemlike.spec contrib/rpm/ompi-smx.spec contrib/knemlike-pc.sh \
	contrib/knemlike.pc.in contrib/dkms/dkms.conf contrib/udev/99-knemlike.rules \
	contrib/modprobe.d/knemlike.conf kmod/Kbuild kmod/Makefile kmod/include/uapi/linux/knemlike.h \
	configure LICENSE; do
	grep -qx "ompi-smx-$version/$f" <<<"$listing" || fail "make dist's tarball lacks $f"
done
junk=$(grep -E '(__pycache__|\.o|\.ko|\.mod\.c|\.cmd|modules\.order|Module\.symvers)$' <<<"$listing" || true)
[ -z "$junk" ] && echo "ok: the tarball carries what the specs use, and no build product" ||
	fail "the tarball carries build products: $junk"
# The key goes into an rpm database of this test's own (rpmlint's too: its HOME's
# .rpmmacros names it), never into the machine's.
mkdir -p "$work/home"
echo "%_dbpath $work/rpmdb" >"$work/home/.rpmmacros"
export SMX_CACHE HOME=$work/home
rpm --import "$work/key.asc"
sigs=$(rpm -K $rpms 2>&1) || true
[ "$(grep -c ': digests signatures OK$' <<<"$sigs")" = 5 ] && echo "ok: every RPM is signed, and rpm checks it" ||
	fail "rpm -K: $sigs"

echo "== bad input is refused by name"
# refused WHAT MESSAGE COMMAND...: COMMAND must fail, saying MESSAGE (a fixed string).
refused() {
	local what=$1 msg=$2 out
	shift 2
	if out=$("$@" 2>&1); then
		fail "$what: accepted"
	elif grep -qF -- "$msg" <<<"$out"; then
		echo "ok: $what: refused ('$msg')"
	else
		fail "$what: refused without saying '$msg':"
		tail -n 5 <<<"$out" | sed 's/^/  | /'
	fi
}
b=$SMX_TOP/contrib/build-rpms.sh
refused "build-rpms.sh --bogus" "unknown option '--bogus'" "$b" --bogus
refused "build-rpms.sh --with-ompi=a directory without Open MPI" "--with-ompi=$work: no bin/ompi_info there" \
	"$b" --with-ompi="$work"
refused "build-rpms.sh --tarball=a missing file" "--tarball=$work/none.tar.gz: no such file" \
	"$b" --tarball="$work/none.tar.gz"
refused "build-rpms.sh --missing-headers=a directory without them" \
	"--missing-headers=$work: no opal/mca/threads/pthreads/threads_pthreads.h there" "$b" --missing-headers="$work"
refused "build-rpms.sh --ompi-package=a bad name" "--ompi-package=a/b: not a package name" "$b" --ompi-package=a/b
# The spec itself, by hand (rpmbuild as on this machine): no Open MPI where ompi_prefix
# says; a component directory other than that Open MPI's.
spec_build() {
	rpmbuild --nodeps --define "_topdir $work/bad" --define "_sourcedir $work/rpms" \
		--define "_udevrulesdir /usr/lib/udev/rules.d" "$@" -bb "$SMX_TOP/contrib/rpm/ompi-smx.spec"
}
refused "ompi-smx.spec, no Open MPI at ompi_prefix" "ompi-smx.spec: no Open MPI at $work/nompi (no bin/ompi_info" \
	spec_build --define "ompi_prefix $work/nompi"
refused "ompi-smx.spec, ompi_pkglibdir not the Open MPI's component directory" \
	"keeps its components in '$pkglibdir', not /usr/lib64/elsewhere: rpmbuild --define \"ompi_pkglibdir $pkglibdir\"" \
	spec_build --define "ompi_prefix $SMX_OMPI_PREFIX" --define "ompi_pkglibdir /usr/lib64/elsewhere"

echo "== rpmlint"
# (one package a run: given several source RPMs at once, rpmlint 2.4 counts their specs together)
lint=
for r in $rpms; do
	lint+=$(rpmlint "$r" 2>&1 | grep -E '^[^ ]+: [EW]: ' || true)$'\n'
done
printf '%s' "$lint" | sed 's/^/  | /'
errors=$(grep -E '^[^ ]+: E: ' <<<"$lint" || true)
[ -z "$errors" ] && echo "ok: rpmlint reports no error" || fail "rpmlint reports errors"
for spec in knemlike ompi-smx; do
	explained=$(sed -n 's/^# rpmlint: \([a-z0-9-]*\): .*/\1/p' "$SMX_TOP/contrib/rpm/$spec.spec" | sort -u)
	reported=$(grep -E "^($spec[.-]|$spec\.spec)" <<<"$lint" | sed -n 's/^[^ ]*: W: \([a-z0-9-]*\).*/\1/p' | sort -u)
	unexplained=$(comm -13 <(echo "$explained") <(echo "$reported") | grep . || true)
	stale=$(comm -23 <(echo "$explained") <(echo "$reported") | grep . || true)
	[ -z "$unexplained" ] && echo "ok: $spec.spec explains each rpmlint warning on its packages" ||
		fail "rpmlint warnings on $spec's packages that $spec.spec does not explain: $unexplained"
	[ -z "$stale" ] || fail "$spec.spec explains rpmlint warnings no longer reported: $stale"
done

echo "== what each package holds"
# expect_files RPM EXPECTED: the RPM's file list (its directories and build-id links aside)
# is EXPECTED, one path a line.
expect_files() {
	local got
	got=$(rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$1" | awk '$1 !~ /^d/ { print $2 }' |
		grep -v '^/usr/lib/.build-id' | sort)
	if [ "$got" = "$(sort <<<"$2")" ]; then
		echo "ok: $1 holds what it should"
	else
		fail "$1 holds other files than it should:"
		diff <(sort <<<"$2") <(echo "$got") | sed 's/^/  | /'
	fi
}
src=/usr/src/knemlike-$version
kmod_files=$(cd "$SMX_TOP/kmod" && ls Kbuild Makefile *.c *.h | sed "s|^|$src/|")
expect_files "knemlike-dkms-$version-1.noarch.rpm" "$kmod_files
$src/dkms.conf
$src/include/uapi/linux/knemlike.h
/usr/lib/udev/rules.d/99-knemlike.rules
/etc/modprobe.d/knemlike.conf
/usr/share/doc/knemlike-dkms-$version/admin-knemlike.md
/usr/share/licenses/knemlike-dkms-$version/LICENSE"
expect_files "knemlike-devel-$version-1.noarch.rpm" "/usr/include/linux/knemlike.h
/usr/share/pkgconfig/knemlike.pc
/usr/share/doc/knemlike-devel-$version/README.md
/usr/share/licenses/knemlike-devel-$version/LICENSE"
doc=/usr/share/doc/ompi-smx-openmpi-$version
expect_files "ompi-smx-openmpi-$version-1.x86_64.rpm" "$pkglibdir/mca_btl_smx.so
$pkglibdir/mca_smsc_knemlike.so
$helpdir/help-btl-smx.txt
$helpdir/help-smsc-knemlike.txt
$doc/README.md
$doc/using-smx.md
$doc/using-knemlike.md
/usr/share/licenses/ompi-smx-openmpi-$version/LICENSE"
[ "$(rpm -qcp "knemlike-dkms-$version-1.noarch.rpm")" = /etc/modprobe.d/knemlike.conf ] &&
	echo "ok: the modprobe.d options are its one configuration file" ||
	fail "knemlike-dkms's configuration files: $(rpm -qcp "knemlike-dkms-$version-1.noarch.rpm")"
reqs=$(rpm -qpR "ompi-smx-openmpi-$version-1.x86_64.rpm")
grep -qx "openmpi(x86-64) = $ompi_version" <<<"$reqs" &&
	echo "ok: ompi-smx-openmpi requires openmpi(x86-64) = $ompi_version" ||
	fail "ompi-smx-openmpi does not require openmpi(x86-64) = $ompi_version: $reqs"
if grep -q 'libopen-pal' <<<"$reqs"; then
	fail "ompi-smx-openmpi requires libopen-pal, which RHEL's openmpi does not provide"
elif rpm -qp --provides "ompi-smx-openmpi-$version-1.x86_64.rpm" | grep -q 'mca_'; then
	fail "ompi-smx-openmpi provides its plugins as libraries"
else
	echo "ok: it requires no private library of Open MPI's and provides no plugin as a library"
fi
grep -qx dkms <<<"$(rpm -qpR "knemlike-dkms-$version-1.noarch.rpm")" && echo "ok: knemlike-dkms requires dkms" ||
	fail "knemlike-dkms does not require dkms"

echo "== rpm --root into an empty directory"
root=$work/root
mkdir "$root"
# --nodeps: dkms, kernel-headers, openmpi and glibc are RHEL packages, none reachable here;
# --noscripts: the empty root has no /bin/sh for %post (DKMS is run by hand below).
if ! rpm --root "$root" --nodeps --noscripts -i "knemlike-dkms-$version-1.noarch.rpm" \
	"knemlike-devel-$version-1.noarch.rpm" "ompi-smx-openmpi-$version-1.x86_64.rpm" >"$work/install.log" 2>&1; then
	cat "$work/install.log"
	echo "FAIL: rpm --root $root -i"
	exit 1
fi
[ "$(rpm --root "$root" -qa --qf '%{NAME}\n' | sort | tr '\n' ' ')" = "knemlike-devel knemlike-dkms ompi-smx-openmpi " ] &&
	echo "ok: rpm --root installed the three packages" || fail "rpm --root -qa: $(rpm --root "$root" -qa)"
verify=$(rpm --root "$root" -Va --nodeps 2>&1 || true)
[ -z "$verify" ] && echo "ok: rpm -V: every installed file as packaged" || fail "rpm -V: $verify"
grep -qx "PACKAGE_VERSION=\"$version\"" "$root$src/dkms.conf" && echo "ok: dkms.conf is of version $version" ||
	fail "$src/dkms.conf is not of version $version"
readelf -d "$root$pkglibdir"/mca_*.so | grep -qE 'R(UN)?PATH' && fail "the installed components carry a run path" ||
	echo "ok: the components carry no run path"

# knemlike-devel: the header and knemlike.pc agree, as installed
printf '%s\n' '#include <stdio.h>' '#include <linux/knemlike.h>' \
	'int main(void) { printf("%u\n", (unsigned int) KNEMLIKE_ABI_VERSION); return 0; }' >"$work/abi.c"
pc_abi=$(PKG_CONFIG_PATH=$root/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root pkg-config --variable=abi_version knemlike)
cflags=$(PKG_CONFIG_PATH=$root/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 \
	pkg-config --cflags knemlike)
prog_abi=$(cc -Wall -Werror $cflags -o "$work/abi" "$work/abi.c" && "$work/abi") || true
[ -n "$pc_abi" ] && [ "$prog_abi" = "$pc_abi" ] && [ "$cflags" = "-I$root/usr/include " ] &&
	echo "ok: a program built with the installed knemlike.pc's Cflags prints its abi_version, $pc_abi" ||
	fail "installed knemlike.pc: Cflags '$cflags', abi_version '$pc_abi'; the program printed '$prog_abi'"

# The Open MPI takes the components from the root alone (its own component path replaced;
# PMIx, which reads that variable too, keeps its own directory).
from_root=(env "OMPI_MCA_mca_base_component_path=$root$pkglibdir"
	"PMIX_MCA_mca_base_component_path=${PMIX_MCA_mca_base_component_path:-$(smx_ompi_path "$SMX_OMPI_PREFIX" libdir)/pmix}")
info=$("${from_root[@]}" "$SMX_OMPI_PREFIX/bin/ompi_info" --parsable 2>&1 | tr -d '\000')
for c in btl:smx smsc:knemlike; do
	grep -q "^mca:$c:version:" <<<"$info" && echo "ok: ompi_info loads $c from the installed package" ||
		fail "ompi_info does not load $c from $root$pkglibdir"
done
"${from_root[@]}" "$SMX_TOP/tests/mpi/run-suite" --quick --only p2p --np 2 --label "the RPM's btl/smx" --mca btl smx,self \
	>"$work/suite.log" 2>&1 && echo "ok: the MPI suite's p2p passes on the installed btl/smx" ||
	{ tail -n 20 "$work/suite.log"; fail "the MPI suite's p2p on the installed btl/smx"; }

echo "== knemlike-dkms's scriptlets with this machine's DKMS, in an overlay of its root"
# rpm installs, reinstalls and erases the package in a root that is this machine's seen
# through an overlay (its dkms, its kernel headers; every write into a tmpfs), in a mount
# namespace of its own: nothing reaches the machine's own DKMS or /lib/modules.
mkdir -p "$work/overlay/root" "$work/overlay/layers"
unshare -m --propagation private bash -s "$work/overlay" "$work/rpms/knemlike-dkms-$version-1.noarch.rpm" \
	"$version" >"$work/scriptlets.log" 2>&1 <<'EOF_SCRIPTLETS' || true
set -u
ovl=$1 pkg=$2 version=$3
m=$ovl/root
mount -t tmpfs tmpfs "$ovl/layers" && mkdir "$ovl/layers/upper" "$ovl/layers/work" &&
	mount -t overlay overlay -o "lowerdir=/,upperdir=$ovl/layers/upper,workdir=$ovl/layers/work" "$m" &&
	mount --rbind /proc "$m/proc" && mount --rbind /sys "$m/sys" && mount --rbind /dev "$m/dev" &&
	mount -t tmpfs tmpfs "$m/tmp" || { echo "FAIL: cannot make the overlay of / (overlayfs, mount namespace)"; exit 1; }
kernels=$(for b in /lib/modules/*/build; do [ -f "$b/Makefile" ] && basename "$(dirname "$b")"; done)
[ -n "$kernels" ] || echo "FAIL: no kernel headers under /lib/modules for %post to build against"
# installed KERNEL: the module is DKMS's and in that kernel's tree
installed() {
	chroot "$m" dkms status -m knemlike -v "$version" -k "$1" | grep -q ': installed' &&
		ls "$m/lib/modules/$1/updates/dkms/"knemlike.ko* >/dev/null 2>&1
}
rpm --root "$m" --nodeps -i "$pkg" || echo "FAIL: rpm -i of knemlike-dkms"
for k in $kernels; do
	installed "$k" && echo "ok: %post registered, built and installed the module for $k" ||
		echo "FAIL: after rpm -i, the module is not installed for $k"
done
rpm --root "$m" --nodeps -U --replacepkgs "$pkg" || echo "FAIL: rpm -U --replacepkgs of knemlike-dkms"
for k in $kernels; do
	installed "$k" && echo "ok: reinstalling the same version keeps it installed for $k (--rpm_safe_upgrade)" ||
		echo "FAIL: after a reinstall of the same version, the module is gone from $k"
done
rpm --root "$m" -e knemlike-dkms || echo "FAIL: rpm -e knemlike-dkms"
left=$(chroot "$m" dkms status knemlike; find "$ovl/layers/upper" -name '*knemlike*' | sed "s|^$ovl/layers/upper||")
[ -z "$left" ] && echo "ok: %preun took the module out of every kernel and DKMS; nothing named knemlike is left" ||
	echo "FAIL: left after rpm -e: $left"
EOF_SCRIPTLETS
grep -E '^(ok|FAIL): ' "$work/scriptlets.log" || true
if grep -q '^FAIL: ' "$work/scriptlets.log" || ! grep -q '^ok: %preun' "$work/scriptlets.log"; then
	grep -v -E '^(ok|FAIL): ' "$work/scriptlets.log" | tail -n 40 | sed 's/^/  | /'
	fail "knemlike-dkms's scriptlets"
fi

echo "== DKMS builds the installed source for Debian's 6.1; the guest loads it"
env=$("$SMX_TOP/tests/vm/prepare-kernel" --series bookworm --print-env) || { echo "FAIL: no 6.1 kernel"; exit 1; }
eval "$env"
dk=(--dkmstree "$work/dkms" --sourcetree "$root/usr/src" --installtree "$root/lib/modules")
mkdir -p "$work/dkms" "$root/lib/modules/$ABI"
if ! { dkms add -m knemlike -v "$version" "${dk[@]}" &&
	dkms build -m knemlike -v "$version" -k "$ABI" --kernelsourcedir "$KBUILD" "${dk[@]}" &&
	dkms install -m knemlike -v "$version" -k "$ABI" --kernelsourcedir "$KBUILD" --no-depmod "${dk[@]}"; } \
	>"$work/dkms.log" 2>&1; then
	cat "$work/dkms.log"
	echo "FAIL: DKMS could not build and install knemlike $version from $root$src for $ABI"
	exit 1
fi
ko=$(find "$root/lib/modules/$ABI" -name 'knemlike.ko*' | head -n 1)
[ -n "$ko" ] || { cat "$work/dkms.log"; echo "FAIL: DKMS installed no knemlike.ko under $root/lib/modules/$ABI"; exit 1; }
case $ko in
*.ko) ;;
*.ko.xz) xz -dkf "$ko"; ko=${ko%.xz} ;;
*.ko.zst) zstd -qdf "$ko"; ko=${ko%.zst} ;;
*.ko.gz) gzip -dkf "$ko"; ko=${ko%.gz} ;;
esac
[ "$(modinfo -F license "$ko")" = "Dual BSD/GPL" ] && [ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$ABI" ] &&
	echo "ok: DKMS built ${ko#"$root"}: Dual BSD/GPL, for $ABI" ||
	fail "$ko: license '$(modinfo -F license "$ko")', vermagic '$(modinfo -F vermagic "$ko")'"
build_id=$(readelf -n "$ko" | sed -n 's/^ *Build ID: *//p')
[ -n "$build_id" ] || fail "$ko has no build ID"
gcc -std=gnu11 -O2 -Wall -Werror -pthread -I"$root/usr/include" -o "$work/kmod_ops" "$SMX_TOP/tests/kmod/kmod_ops.c"
cat >"$work/in-guest.sh" <<EOF
#!/bin/sh
set -e
test -c /dev/knemlike || { echo "FAIL: no /dev/knemlike"; exit 1; }
loaded=\$(od -An -tx1 -v /sys/module/knemlike/notes/.note.gnu.build-id | tr -d ' \\n' | tail -c ${#build_id})
[ "\$loaded" = "$build_id" ] || { echo "FAIL: the loaded module's build ID is \$loaded, not that of DKMS's, $build_id"; exit 1; }
echo "ok: the guest ($ABI) loaded DKMS's knemlike.ko (build ID $build_id)"
"$work/kmod_ops"
rmmod knemlike && echo "ok: it unloads"
EOF
chmod +x "$work/in-guest.sh"
(cd "$work" && "$SMX_TOP/tests/vm/run-in-vm" --series bookworm --module "$ko" --timeout 300 "$work/in-guest.sh") ||
	fail "the guest did not load and use the module DKMS built"
exit $status
