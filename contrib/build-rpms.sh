#!/usr/bin/env bash
# contrib/build-rpms.sh: build the RPM packages for RHEL-family nodes with rpmbuild, from
# the release tarball the project's own `make dist` makes, with the specs it carries
# (contrib/rpm/): knemlike-dkms and knemlike-devel (noarch: the module's source for DKMS,
# its udev rule and options; its uAPI header and knemlike.pc) and
# ompi-smx-openmpi (btl/smx and smsc/knemlike for an Open MPI 5), with their source RPMs.
# Prints the path of each RPM it made, one a line, on stdout.
#
# On a system whose packages are not RPMs (Debian: apt-get install rpm) rpmbuild cannot
# check the BuildRequires and runs with --nodeps; what they name must be there all the
# same (contrib/setup.sh installs it).
#
#   --out=DIR           where the RPMs go (default: build/rpms)
#   --with-ompi=DIR     the Open MPI >= 5 with devel headers (prefix of its bin/ompi_info)
#                       the plugins are built against (default: the one contrib/setup.sh
#                       chose, $SMX_OMPI_PREFIX; on an RPM system without it, the spec's
#                       own default: the distribution's, /usr/lib64/openmpi)
#   --ompi-package=NAME the package of that Open MPI, which ompi-smx-openmpi then requires
#                       at its version (default: openmpi; "none" for no such requirement)
#   --missing-headers=DIR  the three opal/mca/threads/pthreads headers that Open MPI
#                       installs without, if it lacks them (configure --with-ompi-missing-headers)
#   --tarball=FILE      build from this make dist tarball instead of making one
#   --sign=KEY          sign the RPMs with this GnuPG key (rpmsign --addsign); a site
#                       signs with its own key before it publishes them in its repository
#   --no-check          skip the specs' %check (the unit tests; rpmbuild --nocheck)
#   --packager=TEXT     the packages' Packager tag (default: $SMX_RPM_PACKAGER, else the
#                       project's developers: ompi-smx developers <ompi-smx@lists.ompi-smx.org>)
# make dist runs in the configured build tree ($SMX_BUILD, which contrib/setup.sh makes);
# where there is none (a clean clone), in one configured for it here, against the Open MPI
# above (else ompi_info on PATH, else /usr/lib64/openmpi's): configure needs one even to
# make the tarball.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$SMX_BUILD/rpms
ompi=${SMX_OMPI_PREFIX:-}
ompi_package=
headers=
tarball=
sign=
nocheck=()
packager=${SMX_RPM_PACKAGER:-ompi-smx developers <ompi-smx@lists.ompi-smx.org>}
for arg in "$@"; do
	case $arg in
	--out=*) out=${arg#*=} ;;
	--with-ompi=*) ompi=${arg#*=} ;;
	--ompi-package=*) ompi_package=${arg#*=} ;;
	--missing-headers=*) headers=${arg#*=} ;;
	--tarball=*) tarball=${arg#*=} ;;
	--sign=*) sign=${arg#*=} ;;
	--packager=*) packager=${arg#*=} ;;
	--no-check) nocheck=(--nocheck) ;;
	-h | --help) sed -n '2,31s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) smx_die "unknown option '$arg' (see --help)" ;;
	esac
	case $arg in *=) smx_die "$arg: wants a value" ;; esac
done
command -v rpmbuild >/dev/null || smx_die "rpmbuild is not installed (Debian: apt-get install rpm; RHEL: dnf install rpm-build)"
[ -z "$sign" ] || { command -v rpmsign >/dev/null && command -v gpg >/dev/null; } ||
	smx_die "--sign: rpmsign or gpg is not installed (RHEL: dnf install rpm-sign gnupg2)"
[ -z "$ompi" ] || [ -x "$ompi/bin/ompi_info" ] || smx_die "--with-ompi=$ompi: no bin/ompi_info there"
[ -z "$headers" ] || [ -f "$headers/opal/mca/threads/pthreads/threads_pthreads.h" ] ||
	smx_die "--missing-headers=$headers: no opal/mca/threads/pthreads/threads_pthreads.h there"
case $ompi_package in
*[!A-Za-z0-9._+-]*) smx_die "--ompi-package=$ompi_package: not a package name" ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/SOURCES" "$work/specs"

# A build tree to run make dist in: $SMX_BUILD, or one configured here (logs: OUT/).
dist_tree() {
	local tree=$work/dist-build with=()
	if [ -f "$SMX_BUILD/Makefile" ]; then
		echo "$SMX_BUILD"
		return
	fi
	smx_log "no configured build tree in $SMX_BUILD: configuring one for make dist"
	mkdir -p "$out" "$tree"
	if [ ! -x "$SMX_TOP/configure" ]; then
		(cd "$SMX_TOP" && autoreconf -fi) >"$out/autoreconf.log" 2>&1 ||
			{ tail -n 20 "$out/autoreconf.log" >&2; smx_die "autoreconf failed (log: $out/autoreconf.log)"; }
	fi
	if [ -n "$ompi" ]; then
		with=(--with-ompi="$ompi")
	elif ! command -v ompi_info >/dev/null && [ -x /usr/lib64/openmpi/bin/ompi_info ]; then
		with=(--with-ompi=/usr/lib64/openmpi)
	fi
	[ -z "$headers" ] || with+=(--with-ompi-missing-headers="$headers")
	(cd "$tree" && "$SMX_TOP/configure" "${with[@]}" --with-kernel-build=no) >"$out/dist-configure.log" 2>&1 || {
		tail -n 5 "$out/dist-configure.log" >&2
		smx_die "configure for make dist failed (log: $out/dist-configure.log): it needs an Open MPI >= 5 with devel headers (--with-ompi=DIR), or pass --tarball=FILE"
	}
	echo "$tree"
}

# The tarball, made by make dist (its name says its version).
if [ -z "$tarball" ]; then
	tree=$(dist_tree)
	smx_log "make dist in $tree"
	make -s -C "$tree" dist >"$work/dist.log" 2>&1 ||
		{ tail -n 20 "$work/dist.log" >&2; smx_die "make dist failed"; }
	version=$(sed -n 's/^VERSION = //p' "$tree/Makefile")
	tarball=$tree/ompi-smx-$version.tar.gz
	[ -f "$tarball" ] || smx_die "make dist made no $tarball"
	mv "$tarball" "$work/SOURCES/"
else
	[ -f "$tarball" ] || smx_die "--tarball=$tarball: no such file"
	case $(basename "$tarball") in
	ompi-smx-*.tar.gz) ;;
	*) smx_die "--tarball=$tarball: not a release tarball (ompi-smx-VERSION.tar.gz)" ;;
	esac
	cp "$tarball" "$work/SOURCES/"
fi
tarball=$(ls "$work"/SOURCES/ompi-smx-*.tar.gz)
version=$(basename "$tarball" .tar.gz)
version=${version#ompi-smx-}

# The specs the tarball carries, each of the tarball's version.
tar -C "$work/specs" --strip-components=3 -xzf "$tarball" \
	"ompi-smx-$version/contrib/rpm/knemlike.spec" "ompi-smx-$version/contrib/rpm/ompi-smx.spec" ||
	smx_die "$tarball lacks contrib/rpm/*.spec (make dist: EXTRA_DIST)"
for spec in "$work"/specs/*.spec; do
	v=$(sed -n 's/^Version:[[:space:]]*//p' "$spec")
	[ "$v" = "$version" ] ||
		smx_die "contrib/rpm/$(basename "$spec") is of version '$v', the tarball of $version (configure.ac's AC_INIT)"
done

args=(--define "_topdir $work" --define "_sourcedir $work/SOURCES"
	--define "_rpmdir $work/RPMS" --define "_srcrpmdir $work/SRPMS" --define "packager $packager"
	"${nocheck[@]}")
# (RHEL's systemd-rpm-macros define it; Debian's rpm has no such macros)
[ -n "$(rpm --eval '%{?_udevrulesdir}')" ] || args+=(--define "_udevrulesdir /usr/lib/udev/rules.d")
# (rpm -q of rpm itself: installed as an RPM on an RPM system; on Debian its database is empty)
if ! rpm -q rpm >/dev/null 2>&1; then
	smx_log "this system's packages are not RPMs: rpmbuild --nodeps (the BuildRequires are not checked)"
	args+=(--nodeps)
fi
# An Open MPI named here: its directories as its ompi_info gives them (the spec's defaults
# are those of RHEL's layout, relative to the prefix).
ompi_args=()
if [ -n "$ompi" ]; then
	ompi=$(cd "$ompi" && pwd -P)
	ompi_args+=(--define "ompi_prefix $ompi")
	for d in pkglibdir:ompi_pkglibdir pkgdatadir:ompi_helpdir; do
		v=$(smx_ompi_path "$ompi" "${d%%:*}")
		[ -n "$v" ] || smx_die "$ompi/bin/ompi_info --path ${d%%:*} says nothing"
		ompi_args+=(--define "${d#*:} $v")
	done
fi
case $ompi_package in
"") ;;
none) ompi_args+=(--define "ompi_package %{nil}") ;;
*) ompi_args+=(--define "ompi_package $ompi_package") ;;
esac
[ -z "$headers" ] || ompi_args+=(--define "ompi_missing_headers $(cd "$headers" && pwd -P)")

mkdir -p "$out"
for spec in knemlike ompi-smx; do
	extra=()
	[ "$spec" = knemlike ] || extra=("${ompi_args[@]}")
	smx_log "rpmbuild -ba $spec.spec (log: $out/$spec-build.log)"
	if ! rpmbuild "${args[@]}" "${extra[@]}" -ba "$work/specs/$spec.spec" >"$out/$spec-build.log" 2>&1; then
		tail -n 30 "$out/$spec-build.log" >&2
		smx_die "rpmbuild of $spec.spec failed (log: $out/$spec-build.log)"
	fi
done
made=$(find "$work/RPMS" "$work/SRPMS" -name '*.rpm' -printf '%f\n' 2>/dev/null | sort)
[ -n "$made" ] || smx_die "rpmbuild made no RPM"
if [ -n "$sign" ]; then
	smx_log "rpmsign --addsign with key $sign"
	gpg=(--define "_gpg_name $sign")
	# (Debian's rpm calls gpg2, which Debian no longer ships under that name)
	[ -x "$(rpm --eval '%{__gpg}')" ] || gpg+=(--define "__gpg $(command -v gpg)")
	find "$work/RPMS" "$work/SRPMS" -name '*.rpm' -print0 |
		xargs -0 rpmsign --addsign "${gpg[@]}" >"$out/rpmsign.log" 2>&1 ||
		{ cat "$out/rpmsign.log" >&2; smx_die "rpmsign failed (log: $out/rpmsign.log)"; }
fi
find "$work/RPMS" "$work/SRPMS" -name '*.rpm' -exec mv -f -t "$out" {} +
mv -f "$tarball" "$out/"
smx_log "built in $out (with the tarball, $(basename "$tarball")):"
for f in $made; do echo "$out/$f"; done
