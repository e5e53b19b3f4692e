#!/usr/bin/env bash
# contrib/setup.sh: set up everything the project needs, unattended, on a Debian machine.
#
#   Debian packages -> Open MPI >= 5 with devel headers (the one given, else one the system
#   has, else $SMX_OMPI_VERSION built here) -> VM kernel -> build and install the project's
#   components into that Open MPI -> build/env.local (read by contrib/env.sh).
#
# Idempotent: each step checks what is in place first; a second run takes seconds.
# Expensive results live under $SMX_CACHE (default ~/.cache/smx), keyed by version.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<EOF
usage: contrib/setup.sh [--with-ompi=DIR | --own-ompi] [--no-vm] [--no-other-mpis]
                        [--no-build] [--jobs=N] [--print-packages]

  Open MPI: the one given; else an Open MPI >= 5.0 with devel headers that the system
  has (a distribution's, e.g. Debian trixie's openmpi-bin + libopenmpi-dev, or one whose
  ompi_info is on PATH); else $SMX_OMPI_VERSION, built once under the cache.
  --with-ompi=DIR  use the Open MPI (>= 5.0, with devel headers) whose bin/ompi_info is
                   in DIR (also: SMX_OMPI_PREFIX=DIR)
  --own-ompi       build and use $SMX_OMPI_VERSION even when the system has one
  --no-vm          do not prepare the QEMU guest's kernel (needed only by the VM tests;
                   one an earlier setup prepared stays in use)
  --no-other-mpis  do not install MPICH 5, Intel MPI and Open MPI 5.0.11 from PyPI
                   (the benchmark's comparison columns; ones installed earlier stay)
  --no-build       set up dependencies only; do not build the project
  --jobs=N         parallel make jobs (default: cores + 1)
  --print-packages print the Debian packages setup installs (with the options given
                   before it) and exit

Caches under SMX_CACHE=$SMX_CACHE
EOF
}

OMPI_PREFIX=${SMX_OMPI_PREFIX:-}
# contrib/env.sh exports the Open MPI an earlier setup chose; that one is "given" only if
# it was given then (the others stay under setup's care: found again, or rebuilt)
if [ -n "$OMPI_PREFIX" ] && [ -f "$SMX_BUILD/env.local" ] &&
   [ "$( (. "$SMX_BUILD/env.local" && echo "$SMX_OMPI_PREFIX/${SMX_OMPI_GIVEN:-0}") 2>/dev/null)" = "$OMPI_PREFIX/0" ]; then
	OMPI_PREFIX=
fi
OWN_OMPI=0
PRINT_PACKAGES=0
WANT_VM=1
WANT_PYMPI=1
WANT_BUILD=1
JOBS=$(($(nproc) + 1))
for arg in "$@"; do
	case $arg in
	--with-ompi=*) OMPI_PREFIX=${arg#*=}
		[ -n "$OMPI_PREFIX" ] || smx_die "--with-ompi wants a directory" ;;
	--own-ompi) OWN_OMPI=1 ;;
	--print-packages) PRINT_PACKAGES=1 ;;
	--no-vm) WANT_VM=0 ;;
	--no-other-mpis) WANT_PYMPI=0 ;;
	--no-build) WANT_BUILD=0 ;;
	--jobs=*) JOBS=${arg#*=}
		[[ $JOBS =~ ^[1-9][0-9]{0,3}$ ]] || smx_die "--jobs wants a number of jobs (1-9999), not '$JOBS'" ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; smx_die "unknown option '$arg'" ;;
	esac
done
# (the one setup itself builds is never "given": it stays under setup's care)
[ "$OMPI_PREFIX" != "$SMX_CACHE/openmpi-$SMX_OMPI_VERSION/prefix" ] || OMPI_PREFIX=
[ -z "$OMPI_PREFIX" ] || [ "$OWN_OMPI" = 0 ] || smx_die "--own-ompi and --with-ompi: choose one"
OMPI_GIVEN=0
if [ -n "$OMPI_PREFIX" ]; then # configure runs elsewhere, and env.local outlives this cwd
	OMPI_PREFIX=$(realpath -e -- "$OMPI_PREFIX") || smx_die "--with-ompi: no such directory"
	OMPI_GIVEN=1
fi
# The three headers an Open MPI's devel headers may lack (ompi_usable), when setup took them
# from its source: configure --with-ompi-missing-headers.
OMPI_MISSING_HEADERS=

# Print elapsed time every 30 s while a long step runs, so a silent build is not a hung one.
heartbeat() {
	local what=$1 start=$SECONDS nap=
	# (the sleep in the background: stopped with the loop, it does not hold our output
	# open for up to 30 s more)
	trap '[ -z "$nap" ] || kill "$nap" 2>/dev/null; exit 0' TERM
	while :; do
		sleep 30 &
		nap=$!
		wait "$nap"
		smx_log "  ... $what: $((SECONDS - start)) s"
	done
}

run_logged() {
	local what=$1 log=$2
	shift 2
	local hb
	heartbeat "$what" &
	hb=$!
	if ! "$@" >"$log" 2>&1; then
		kill "$hb" 2>/dev/null
		tail -n 40 "$log" >&2
		smx_die "$what failed; full log: $log"
	fi
	kill "$hb" 2>/dev/null
	wait "$hb" 2>/dev/null || true
}

# The Debian packages setup needs (the VM's only with the VM).
packages() {
	echo build-essential autoconf automake libtool pkg-config \
		libhwloc-dev hwloc libevent-dev libgtest-dev zlib1g-dev \
		kmod dwarves dkms dpkg-dev python3 file \
		python3-venv python3-dev mpich libmpich-dev python3-matplotlib strace valgrind gdb \
		debootstrap zstd rpm rpmlint gpg gpg-agent
	[ "$WANT_VM" = 0 ] || echo qemu-system-x86 busybox-static cpio
}

step_packages() {
	smx_log "checking Debian packages"
	# shellcheck disable=SC2046
	smx_need_packages $(packages)
}

THREADS_HEADERS="threads_pthreads.h threads_pthreads_mutex.h threads_pthreads_threads.h"

# One-line verdict on an Open MPI installation; empty output means usable. MISSING, when
# given, is a directory that supplies the opal/mca/threads/pthreads headers it may lack.
ompi_problem() {
	local p=$1 missing=${2:-} inc v major h
	[ -x "$p/bin/ompi_info" ] || { echo "no Open MPI at $p (no bin/ompi_info)"; return; }
	v=$(smx_ompi_version "$p")
	[ -n "$v" ] || { echo "$p/bin/ompi_info does not report a version"; return; }
	major=${v%%.*}
	[ "$major" -ge 5 ] 2>/dev/null ||
		{ echo "Open MPI at $p is $v; this project needs >= 5.0 (the smsc framework)"; return; }
	inc=$(smx_ompi_path "$p" pkgincludedir)
	for h in opal_config.h opal/mca/btl/btl.h opal/mca/smsc/smsc.h; do
		[ -n "$inc" ] && [ -f "$inc/$h" ] ||
			{ echo "Open MPI $v at $p has no devel headers (no $h in ${inc:-its pkgincludedir}: rebuild it with --with-devel-headers, or install the distribution's, Debian's libopenmpi-dev)"; return; }
	done
	for h in $THREADS_HEADERS; do
		h=opal/mca/threads/pthreads/$h
		[ -f "$inc/$h" ] || { [ -n "$missing" ] && [ -f "$missing/$h" ]; } ||
			{ echo "Open MPI $v at $p lacks devel header $h (copy opal/mca/threads/pthreads/*.h from its source tree)"; return; }
	done
}

# The version of the Debian source package that installed FILE; empty if none did.
deb_source_version() {
	local pkg
	command -v dpkg-query >/dev/null || return 0
	pkg=$(dpkg-query -S "$1" 2>/dev/null | head -n 1 | cut -d: -f1) || return 0
	[ -z "$pkg" ] || dpkg-query -W -f='${source:Version}' "$pkg" 2>/dev/null || true
}

# Whether the Open MPI in PREFIX can host the components: returns 0 if so, else 1 with
# OMPI_PROBLEM saying why. The three headers --with-devel-headers forgets (so does Debian's
# libopenmpi-dev) are taken from the same version's Debian source package when that Open
# MPI is Debian's, into $SMX_CACHE/openmpi-<version>/missing-headers (OMPI_MISSING_HEADERS).
ompi_usable() {
	local p=$1 v dv hdrs
	OMPI_MISSING_HEADERS=
	OMPI_PROBLEM=$(ompi_problem "$p")
	case $OMPI_PROBLEM in
	"") return 0 ;;
	*"lacks devel header opal/mca/threads/pthreads/"*) ;;
	*) return 1 ;;
	esac
	v=$(smx_ompi_version "$p")
	hdrs=$SMX_CACHE/openmpi-$v/missing-headers
	if [ ! -f "$hdrs/.complete" ]; then
		dv=$(deb_source_version "$p/bin/ompi_info")
		if [ -z "$dv" ]; then
			OMPI_PROBLEM+="; it is not Debian's, so setup cannot fetch them"
			return 1
		fi
		smx_log "Open MPI $v at $p lacks three devel headers: taking them from Debian's source package openmpi=$dv"
		rm -rf "$hdrs"
		if ! smx_ompi_missing_headers "$hdrs" "$v" "$dv"; then
			OMPI_PROBLEM+="; setup could not take them from Debian's source package openmpi=$dv"
			return 1
		fi
		touch "$hdrs/.complete"
	fi
	OMPI_PROBLEM=$(ompi_problem "$p" "$hdrs")
	[ -z "$OMPI_PROBLEM" ] || return 1
	OMPI_MISSING_HEADERS=$hdrs
}

# An Open MPI that the system already has and that can host the components: the ones whose
# ompi_info is on PATH, then /usr's (a distribution's), never one under $SMX_CACHE. Sets
# OMPI_PREFIX and returns 0 on the first usable one; says why each other one is not.
find_system_ompi() {
	local c p seen=" " cache
	cache=$(realpath -m -- "$SMX_CACHE")
	for c in $(type -a -P ompi_info 2>/dev/null) /usr/bin/ompi_info; do
		[ -x "$c" ] || continue
		# (through links: build/ompi-bin's lead to the Open MPI they stand for)
		c=$(realpath -e -- "$c") && p=$(cd "$(dirname "$c")/.." && pwd -P) || continue
		case "$p/" in "$cache"/*) continue ;; esac
		case "$seen" in *" $p "*) continue ;; esac
		seen+="$p "
		if ompi_usable "$p"; then
			OMPI_PREFIX=$p
			return 0
		fi
		smx_log "not using the Open MPI at $p: $OMPI_PROBLEM"
	done
	return 1
}

# How Open MPI is configured: part of what the cache holds, recorded beside it, so that a
# change here rebuilds it.
OMPI_CONFIGURE_FLAGS=(--with-devel-headers --disable-mpi-fortran --with-hwloc=external
	--with-libevent=external --without-ucx --without-ofi --disable-oshmem --disable-io-romio)

build_ompi() {
	local root="$SMX_CACHE/openmpi-$SMX_OMPI_VERSION"
	local prefix="$root/prefix" problem
	OMPI_PREFIX=$prefix
	if [ -f "$root/.complete" ]; then
		problem=$(ompi_problem "$prefix")
		# (caches made before the flags were recorded were made with these)
		[ -f "$root/.flags" ] || echo "${OMPI_CONFIGURE_FLAGS[*]}" >"$root/.flags"
		[ -n "$problem" ] || [ "$(cat "$root/.flags")" = "${OMPI_CONFIGURE_FLAGS[*]}" ] ||
			problem="it was configured with other flags"
		if [ -z "$problem" ]; then
			smx_log "Open MPI $SMX_OMPI_VERSION: cached in $prefix"
			return
		fi
		smx_log "Open MPI $SMX_OMPI_VERSION: the cached build is unusable ($problem); rebuilding"
		rm -f "$root/.complete" "$root/.installed"
	fi
	local src="$root/src/openmpi-$SMX_OMPI_VERSION"
	# .installed without the source tree: the headers below cannot be copied, start again
	if [ ! -f "$root/.installed" ] || [ ! -d "$src" ]; then
		fetch_ompi_source "$root"
		compile_ompi "$src" "$prefix" "$root"
		echo "${OMPI_CONFIGURE_FLAGS[*]}" >"$root/.flags"
		touch "$root/.installed"
	fi
	# --with-devel-headers forgets these three, yet opal_config.h includes them.
	local hdrs="$prefix/include/openmpi/opal/mca/threads/pthreads"
	install -d "$hdrs"
	install -m 644 "$src"/opal/mca/threads/pthreads/threads_pthreads*.h "$hdrs/"
	local problem
	problem=$(ompi_problem "$prefix")
	[ -z "$problem" ] || smx_die "$problem"
	rm -rf "$root/src"
	touch "$root/.complete"
	smx_log "Open MPI $SMX_OMPI_VERSION: installed in $prefix"
}

fetch_ompi_source() {
	local root=$1 t
	t=$(smx_ompi_source_tarball) || smx_die "could not fetch the source of Open MPI $SMX_OMPI_VERSION"
	rm -rf "$root/src"
	mkdir -p "$root/src"
	tar -C "$root/src" -xf "$t" ||
		smx_die "could not unpack $t (delete $root/dl to download it again)"
}

compile_ompi() {
	local src=$1 prefix=$2 root=$3
	[ -d "$src" ] || smx_die "unexpected layout of the Open MPI tarball: no $src"
	rm -rf "$prefix"
	smx_log "Open MPI $SMX_OMPI_VERSION: configure (about 1.5 min on 2 cores)"
	run_logged "configure Open MPI" "$root/configure.log" \
		sh -c 'cd "$1" && shift && ./configure "$@"' sh "$src" --prefix="$prefix" \
		"${OMPI_CONFIGURE_FLAGS[@]}"
	smx_log "Open MPI $SMX_OMPI_VERSION: make -j$JOBS and install (about 4 min on 2 cores)"
	run_logged "build Open MPI" "$root/make.log" \
		sh -c 'cd "$1" && make -j"$2" && make install' sh "$src" "$JOBS"
}

step_ompi() {
	if [ -n "$OMPI_PREFIX" ]; then
		ompi_usable "$OMPI_PREFIX" || smx_die "$OMPI_PROBLEM"
		smx_log "Open MPI $(smx_ompi_version "$OMPI_PREFIX"): using $OMPI_PREFIX (given)"
	elif [ "$OWN_OMPI" = 0 ] && find_system_ompi; then
		smx_log "Open MPI $(smx_ompi_version "$OMPI_PREFIX"): using the system's, in $OMPI_PREFIX (--own-ompi builds $SMX_OMPI_VERSION instead)"
	else
		build_ompi
	fi
}

# mpi4py, built from its sdist against this Open MPI: its own test suite is a client we did
# not write (tests/check-mpi4py.sh). Its virtualenv is cached per mpi4py version.
step_mpi4py() {
	if [ -z "$(smx_mpi4py_problem "$OMPI_PREFIX")" ]; then
		smx_log "mpi4py $SMX_MPI4PY_VERSION: cached in $SMX_MPI4PY_DIR"
		return
	fi
	smx_log "mpi4py $SMX_MPI4PY_VERSION: building from its sdist against $OMPI_PREFIX (about 4 min on 2 cores)"
	mkdir -p "$SMX_MPI4PY_DIR"
	run_logged "build mpi4py" "$SMX_MPI4PY_DIR/build.log" smx_mpi4py_build "$OMPI_PREFIX"
	smx_log "mpi4py $SMX_MPI4PY_VERSION: installed in $SMX_MPI4PY_DIR/venv"
}

# The other MPIs from PyPI, for the benchmark's columns (contrib/quickstart.sh).
step_pympi() {
	local x name
	for x in $SMX_PYMPIS; do
		name=${x%%=*}
		if [ -z "$(smx_pympi_problem "$name")" ]; then
			smx_log "${x#*=}: cached in $(smx_pympi_venv "$name")"
			continue
		fi
		smx_log "${x#*=}: installing from PyPI into $(smx_pympi_venv "$name")"
		mkdir -p "$SMX_PYMPI_DIR"
		run_logged "install ${x#*=}" "$SMX_PYMPI_DIR/$name-install.log" smx_pympi_install "$name"
	done
}

# The guest's kernels: bookworm's (the default guest, and the tree kmod/ is built against
# when the running kernel has none) and bookworm-backports' (the module's second series).
step_vm_kernel() {
	VM_KERNEL_DIR=$("$SMX_TOP/tests/vm/prepare-kernel" --series bookworm --print-dir) ||
		smx_die "could not prepare the VM kernel (bookworm)"
	"$SMX_TOP/tests/vm/prepare-kernel" --series bookworm-backports >/dev/null ||
		smx_die "could not prepare the VM kernel (bookworm-backports)"
}

step_build() {
	smx_log "building the project in $SMX_BUILD"
	if [ ! -x "$SMX_TOP/configure" ] || [ "$SMX_TOP/configure.ac" -nt "$SMX_TOP/configure" ] ||
	   [ "$SMX_TOP/configure.m4" -nt "$SMX_TOP/configure" ]; then
		run_logged "autoreconf" "$SMX_CACHE/autoreconf.log" \
			sh -c 'cd "$1" && autoreconf -fi' sh "$SMX_TOP"
	fi
	mkdir -p "$SMX_BUILD"
	local want=("--with-ompi=$OMPI_PREFIX")
	[ -z "$OMPI_MISSING_HEADERS" ] || want+=("--with-ompi-missing-headers=$OMPI_MISSING_HEADERS")
	[ -z "$VM_KERNEL_DIR" ] || want+=("--with-vm-kernel=$VM_KERNEL_DIR")
	if [ ! -f "$SMX_BUILD/Makefile" ] ||
	   [ "$(cat "$SMX_BUILD/.configured-with" 2>/dev/null)" != "${want[*]}" ]; then
		run_logged "configure the project" "$SMX_BUILD/setup-configure.log" \
			sh -c 'cd "$1" && shift && "$@"' sh "$SMX_BUILD" "$SMX_TOP/configure" "${want[@]}"
		echo "${want[*]}" >"$SMX_BUILD/.configured-with"
	fi
	run_logged "build the project" "$SMX_BUILD/setup-make.log" \
		make -C "$SMX_BUILD" -j"$JOBS" all
	# (a distribution's Open MPI keeps its components where only root writes)
	local dir as=()
	dir=$(sed -n 's/^SMX_COMPONENT_DIR = //p' "$SMX_BUILD/Makefile")
	[ -w "$dir" ] || as=(smx_as_root)
	run_logged "install the components" "$SMX_BUILD/setup-install.log" \
		"${as[@]}" make -C "$SMX_BUILD" install
	smx_log "components installed into $dir (make -C $SMX_BUILD uninstall removes them)"
}

write_env() {
	mkdir -p "$SMX_BUILD"
	{
		echo "# written by contrib/setup.sh on $(date -u +%FT%TZ); read by contrib/env.sh"
		printf 'SMX_OMPI_PREFIX=%q\n' "$OMPI_PREFIX"
		printf 'SMX_OMPI_GIVEN=%q\n' "$OMPI_GIVEN"
		printf 'SMX_VM_KERNEL_DIR=%q\n' "${VM_KERNEL_DIR:-}"
		printf 'SMX_CACHE=%q\n' "$SMX_CACHE"
	} >"$SMX_BUILD/env.local"
}

if [ "$PRINT_PACKAGES" = 1 ]; then
	packages | tr ' ' '\n' | grep -v '^$'
	exit 0
fi
VM_KERNEL_DIR=
start=$SECONDS
# One setup at a time per cache: two would build into, and delete, the same trees.
mkdir -p "$SMX_CACHE"
exec 9>"$SMX_CACHE/.setup.lock"
if ! flock -n 9; then
	smx_log "another contrib/setup.sh is using $SMX_CACHE; waiting for it"
	flock 9
fi
step_packages
step_ompi
step_mpi4py
[ "$WANT_PYMPI" = 0 ] || step_pympi
if [ "$WANT_VM" = 1 ]; then
	step_vm_kernel
else # a guest kernel an earlier setup prepared stays in use
	VM_KERNEL_DIR=$( (. "$SMX_BUILD/env.local" && echo "${SMX_VM_KERNEL_DIR:-}") 2>/dev/null || true)
	[ -n "$VM_KERNEL_DIR" ] && [ -f "$VM_KERNEL_DIR/kernel.env" ] || VM_KERNEL_DIR=
fi
write_env
[ "$WANT_BUILD" = 1 ] && step_build
smx_log "setup done in $((SECONDS - start)) s; now: . contrib/env.sh"
