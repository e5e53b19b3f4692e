# tests/vm/guest-lib.sh: what the two guest runners share (run-in-vm: QEMU; run-in-uml:
# User-mode Linux): their options' checks, the directories a guest sees writable at their
# host paths, the command's script and environment, and the verdict read from the
# control directory $GUEST_CTL (status, error, dmesg, console.log, output-lost). Source it.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/lib.sh"

# What in a kernel log means the kernel (or a module) misbehaved; shared with the tests
# that check the log themselves.
GUEST_TROUBLE=$(cat "$(dirname "${BASH_SOURCE[0]}")/kernel-log-trouble")
GUEST_PASS_ENV='PATH|LD_LIBRARY_PATH|OPAL_PREFIX|HOME|TERM|LANG|LANGUAGE|LC_[A-Z]+|TZ|MPICC'
GUEST_PASS_ENV+='|(SMX|OMPI|PRTE|PMIX|HWLOC)_[A-Za-z0-9_]+'
GUEST_CTL=
GUEST_DMESG_FILE=
GUEST_EXTRA_ENV=()
GUEST_EXTRA_SHARES=()
GUEST_SHARES=()

# The comment at the top of the script $1, up to the licence line.
guest_usage() { awk 'NR > 1 && /^# SPDX/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$1"; }

guest_need_number() {
	[[ $2 =~ ^[1-9][0-9]*$ ]] || smx_die "$1 needs a positive number, not '$2'"
}

guest_add_env() {
	[[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || smx_die "--env needs a variable name"
	GUEST_EXTRA_ENV+=("$1")
}

# Shares: "MODE PATH" entries. A directory inside one already listed is left out, so the
# writable ones, listed first, win over read-only ones that contain them.
# Usage: guest_add_share ro|rw PATH [optional].
guest_add_share() {
	local mode=$1 path=$2 optional=${3:-} s
	if [ ! -d "$path" ]; then
		[ -n "$optional" ] && return 0
		smx_die "cannot share $path: not a directory"
	fi
	path=$(realpath -e "$path")
	case $path in
	/) smx_die "cannot share / writable (run from a directory below it)" ;;
	*$'\n'* | *$'\t'*) smx_die "cannot share a path with a newline or tab: $path" ;;
	esac
	for s in "${GUEST_SHARES[@]}"; do
		s=${s#* }
		[ "$path" = "$s" ] || [ "${path#"$s"/}" != "$path" ] && return 0
	done
	GUEST_SHARES+=("$mode $path")
}

# The current directory, --share's and $SMX_BUILD writable; the project's tree, $SMX_CACHE
# and $SMX_OMPI_PREFIX read-only (the guest's tmpfs on /tmp would hide them there).
guest_collect_shares() {
	local d
	guest_add_share rw "$(pwd -P)"
	for d in "${GUEST_EXTRA_SHARES[@]}"; do
		guest_add_share rw "$d"
	done
	guest_add_share rw "$SMX_BUILD" optional
	guest_add_share ro "$SMX_TOP"
	guest_add_share ro "$SMX_CACHE" optional
	# (a distribution's, in /usr, is in the root the guest sees already)
	[ "${SMX_OMPI_PREFIX:-}" = /usr ] || guest_add_share ro "${SMX_OMPI_PREFIX:-$SMX_CACHE}" optional
}

# The shares as "MODE PATH" lines, parents before their children (mount order).
guest_shares_parents_first() {
	printf '%s\n' "${GUEST_SHARES[@]}" | awk '{ print length($0) "\t" $0 }' | sort -n | cut -f2-
}

# guest_write_command FILE RUNNER [NAME=VALUE...]: the guest's command script: a
# login-like environment, the host's variables, NAME=VALUE, then COMMAND (the array) in
# the current directory.
guest_write_command() {
	local file=$1 runner=$2 name
	shift 2
	{
		echo "# written by tests/vm/$runner"
		echo "export USER=root LOGNAME=root SHELL=/bin/bash TMPDIR=/tmp"
		for name in $(compgen -e | grep -xE "$GUEST_PASS_ENV") "${GUEST_EXTRA_ENV[@]}"; do
			[ -n "${!name+set}" ] && printf 'export %s=%q\n' "$name" "${!name}"
		done
		printf 'export SMX_TOP=%q SMX_BUILD=%q SMX_CACHE=%q\n' "$SMX_TOP" "$SMX_BUILD" "$SMX_CACHE"
		for name in "$@"; do
			printf 'export %s=%q\n' "${name%%=*}" "${name#*=}"
		done
		# shellcheck disable=SC2016 # expanded in the guest
		echo '[ -d "$HOME" ] || { export HOME=/tmp/home; mkdir -p "$HOME"; }'
		printf 'cd %q || exit 126\n' "$(pwd -P)"
		printf 'exec'
		printf ' %q' "${COMMAND[@]}"
		echo
	} >"$file"
}

guest_show_console_tail() {
	local runner=$1 at log=$GUEST_CTL/console.log
	[ -s "$log" ] || return 0
	# a panic: from just before its first line (its cause), however much follows it (a
	# loaded host adds stall reports after the call trace)
	at=$(grep -n -m1 'Kernel panic' "$log" | cut -d: -f1)
	if [ -n "$at" ]; then
		echo "$runner: the guest's console from the panic on:" >&2
		tail -n +"$((at > 5 ? at - 5 : 1))" "$log" | head -n 150 | tr -d '\r' >&2
		return 0
	fi
	echo "$runner: the last lines of the guest's console:" >&2
	tail -n 40 "$log" | tr -d '\r' >&2
}

guest_save_kernel_log() {
	[ -n "$GUEST_DMESG_FILE" ] || return 0
	if [ -f "$GUEST_CTL/dmesg" ]; then
		cp "$GUEST_CTL/dmesg" "$GUEST_DMESG_FILE"
	elif [ -f "$GUEST_CTL/console.log" ]; then
		tr -d '\r' <"$GUEST_CTL/console.log" >"$GUEST_DMESG_FILE"
	fi
}

# guest_verdict RUNNER EXIT TIMEOUT: the exit status from what the guest left in
# $GUEST_CTL; EXIT is the status the guest's process (under timeout) ended with.
guest_verdict() {
	local runner=$1 exit=$2 timeout=$3 status
	guest_save_kernel_log
	if [ -f "$GUEST_CTL/error" ]; then
		echo "$runner: the guest could not set up: $(cat "$GUEST_CTL/error")" >&2
		[ -f "$GUEST_CTL/dmesg" ] && tail -n 15 "$GUEST_CTL/dmesg" >&2
		return 125
	fi
	if [ ! -f "$GUEST_CTL/status" ]; then
		guest_show_console_tail "$runner"
		if [ "$exit" = 124 ] || [ "$exit" = 137 ]; then
			echo "$runner: the guest did not finish within $timeout s; stopped it" >&2
			return 124
		fi
		if grep -q 'Kernel panic' "$GUEST_CTL/console.log" 2>/dev/null; then
			echo "$runner: the guest's kernel panicked (see above)" >&2
		else
			echo "$runner: the guest stopped without a status (exit $exit):" \
				"boot failure, or the guest was stopped" >&2
		fi
		return 125
	fi
	status=$(cat "$GUEST_CTL/status")
	[ ! -f "$GUEST_CTL/output-lost" ] || echo "$runner: the guest gave up copying the command's" \
		"output after $(cat "$GUEST_CTL/output-lost") s (processes it left running hold it" \
		"open): the end may be missing" >&2
	if grep -Eq "$GUEST_TROUBLE" "$GUEST_CTL/dmesg"; then
		echo "$runner: the guest's kernel log shows trouble (COMMAND exited $status):" >&2
		grep -E -B3 -A15 "$GUEST_TROUBLE" "$GUEST_CTL/dmesg" | head -n 100 >&2
		[ "$status" = 0 ] && status=99
	fi
	return "$status"
}
