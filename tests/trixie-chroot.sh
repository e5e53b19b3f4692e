# tests/trixie-chroot.sh: a Debian trixie chroot for the tests of the distribution's Open
# MPI (check-trixie.sh, check-debian-packages.sh). Source it from a test running as root;
# it re-executes the test in a mount namespace of its own, so that the chroot's mounts go
# with the test whatever ends it and nothing reaches the host's /dev/shm.
#   trixie_chroot_make   unpack the tree into $TRIXIE_ROOT (made by debootstrap from
#                        Debian's packages the first time, then cached as a tarball under
#                        $SMX_CACHE/trixie keyed by the package list), mount /proc, /sys,
#                        /dev and a /dev/shm of its own; removed at exit
#   trixie_keep DIR NAME keep the tree's DIR across runs: bind $SMX_CACHE/trixie/NAME there
#   in_chroot SCRIPT     bash -c SCRIPT in the tree, with nothing of the caller's environment
# SPDX-License-Identifier: BSD-3-Clause
[ "$(id -u)" = 0 ] || { echo "FAIL: needs root (debootstrap, chroot, mounts)"; exit 1; }
for _tool in debootstrap unshare chroot zstd; do
	command -v "$_tool" >/dev/null ||
		{ echo "FAIL: $_tool is not installed (contrib/setup.sh installs it)"; exit 1; }
done
if [ -z "${SMX_TRIXIE_NS:-}" ]; then
	SMX_TRIXIE_NS=1 exec unshare --mount --propagation private "$0" "$@"
fi
. "$SMX_TOP/contrib/lib.sh"

# Trixie's Open MPI and what our build needs (installed by debootstrap); then, by apt in
# the tree (debootstrap's own resolver fails to configure them all at once), what Debian
# packaging and DKMS need, and a kernel's headers for DKMS to build the module against.
TRIXIE_PACKAGES=(openmpi-bin libopenmpi-dev libpmix-dev libevent-dev libhwloc-dev libgtest-dev
	build-essential autoconf automake libtool pkg-config)
TRIXIE_PACKAGES_APT=(dpkg-dev debhelper dh-dkms dkms lintian fakeroot linux-headers-amd64)
TRIXIE_ROOT=$(mktemp -d /var/tmp/smx-trixie.XXXXXX)
TRIXIE_KEPT=()
_trixie_cleanup() {
	local m
	_trixie_umount
	# (a bind mount is the same file system: --one-file-system would not stop rm there)
	for m in "${TRIXIE_KEPT[@]}"; do
		if mountpoint -q "$TRIXIE_ROOT/$m"; then
			echo "warning: $TRIXIE_ROOT/$m is still mounted; leaving $TRIXIE_ROOT" >&2
			return
		fi
	done
	rm -rf --one-file-system "$TRIXIE_ROOT"
}
trap _trixie_cleanup EXIT

trixie_chroot_make() {
	local key cache=$SMX_CACHE/trixie tarball incl
	key=$(printf '%s\n' trixie minbase "${TRIXIE_PACKAGES[@]}" apt "${TRIXIE_PACKAGES_APT[@]}" |
		sha256sum | cut -c1-12)
	tarball=$cache/rootfs-$key.tar.zst
	if [ ! -f "$tarball" ]; then
		echo "== making the trixie tree (debootstrap, about 2 minutes; cached as $tarball)"
		mkdir -p "$cache"
		incl=$(IFS=,; echo "${TRIXIE_PACKAGES[*]}")
		if ! debootstrap --variant=minbase --include="$incl" trixie "$TRIXIE_ROOT" \
			"$(smx_debian_mirror)" >"$cache/debootstrap.log" 2>&1; then
			tail -n 20 "$cache/debootstrap.log"
			echo "FAIL: debootstrap of trixie failed (log: $cache/debootstrap.log)"
			exit 1
		fi
		_trixie_mount
		if ! in_chroot "apt-get install -y -q --no-install-recommends ${TRIXIE_PACKAGES_APT[*]}" \
			>"$cache/apt.log" 2>&1; then
			tail -n 20 "$cache/apt.log"
			echo "FAIL: apt-get install in the trixie tree failed (log: $cache/apt.log)"
			exit 1
		fi
		in_chroot 'apt-get clean'
		_trixie_umount
		# older trees of another package list go: each is hundreds of MB
		rm -f "$cache"/rootfs-*.tar.zst
		tar -C "$TRIXIE_ROOT" --zstd -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
	else
		echo "== unpacking the cached trixie tree $tarball"
		tar -C "$TRIXIE_ROOT" --zstd -xf "$tarball"
	fi
	# The tree trusts what this host trusts (a network whose proxy has its own CA): tools
	# run in it fetch from PyPI over HTTPS.
	[ ! -f /etc/ssl/certs/ca-certificates.crt ] ||
		cp /etc/ssl/certs/ca-certificates.crt "$TRIXIE_ROOT/etc/ssl/certs/ca-certificates.crt"
	[ ! -f /etc/pip.conf ] || cp /etc/pip.conf "$TRIXIE_ROOT/etc/pip.conf"
	_trixie_mount
}

_trixie_mount() {
	mount --bind /proc "$TRIXIE_ROOT/proc"
	mount --bind /sys "$TRIXIE_ROOT/sys"
	mount --bind /dev "$TRIXIE_ROOT/dev"
	mount -t tmpfs -o size=512m tmpfs "$TRIXIE_ROOT/dev/shm"
}

trixie_keep() {
	local dir=$1 keep=$SMX_CACHE/trixie/$2
	mkdir -p "$keep" "$TRIXIE_ROOT$dir"
	mount --bind "$keep" "$TRIXIE_ROOT$dir"
	TRIXIE_KEPT+=("${dir#/}")
}

_trixie_umount() {
	local m
	for m in "${TRIXIE_KEPT[@]}" dev/shm dev sys proc; do
		umount -l "$TRIXIE_ROOT/$m" 2>/dev/null || true
	done
}

in_chroot() {
	chroot "$TRIXIE_ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive /bin/bash -c "$1"
}
