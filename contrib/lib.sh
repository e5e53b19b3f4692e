# contrib/lib.sh: helpers shared by the project's shell tools. Source it; do not run it.
# SPDX-License-Identifier: BSD-3-Clause

SMX_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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
		smx_apt update >/dev/null
		mkdir -p "$SMX_CACHE" && touch "$SMX_CACHE/.apt-updated"
	fi
	smx_apt install -y --no-install-recommends "${missing[@]}" >/dev/null ||
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
