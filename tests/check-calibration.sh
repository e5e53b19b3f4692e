#!/usr/bin/env bash
# btl/smx's calibration file (the node's single-copy cost and thresholds, which local rank
# 0 reads at init, or measures and writes): written where missing, under the user's cache
# directory by default; read and used where current, values set as MCA parameters winning;
# measured again and rewritten where its key is not this node's; named with its line where
# it cannot be read, and left alone while the job runs on without it; never written where
# it cannot be, nor when turned off, the job running on either way. Every job is the MPI
# suite's p2p on smx with cma, which checks every byte it receives. contrib/smx-tune
# calibrate writes a file whose thresholds btl/smx then uses.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$top/build}
. "$top/tests/configurations.sh"
"$top/tests/mpi/run-suite" --build-only >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the user's own cache directory stays out of it (and the default path is known)
export XDG_CACHE_HOME=$work/xdg
launch=(mpirun -np 2)
launch+=($(smx_root_args))
kernel=$(uname -r)

# job FILE [MCA-ARGS...]: p2p with FILE as the calibration file ("" for the default), at
# btl_base_verbose info; its output in $out
job() {
	local file=$1
	shift
	out=$("${launch[@]}" $(smx_config_args smx-cma) --mca btl_base_verbose info \
		${file:+--mca btl_smx_calibration_file "$file"} "$@" "$build/tests/mpi/p2p" 2>&1 |
		tr -d '\000')
}
# policy KEY: KEY's values in the policy lines of both processes, one line each, or "" if
# there are not two lines; several values of one process (a key per class) joined by /
policy() {
	local lines
	lines=$(grep "btl:smx: policy: " <<<"$out" || true)
	[ "$(grep -c . <<<"$lines")" = 2 ] || return 0
	while read -r line; do
		tr ' ' '\n' <<<"${line#*btl:smx: policy: }" | sed -n "s/^$1=//p" | sort -u | paste -sd/
	done <<<"$lines" | sort -u
}
passed() { grep -q "^p2p: PASS" <<<"$out"; }
# (the number of the line of FILE that says PATTERN)
line_of() { grep -n "$2" "$1" | head -1 | cut -d: -f1; }
# set NAME VALUE FILE: the parameter line of NAME in FILE says VALUE
set_value() { sed -i "s/^$1=.*/$1=$2/" "$3"; }
set_thresholds() { # set_thresholds FILE EAGER SINGLE: every class's
	local cls
	for cls in l2 l3 package numa remote; do
		set_value "btl_smx_eager_limit_$cls" "$2" "$1"
		set_value "btl_smx_single_copy_min_$cls" "$3" "$1"
	done
}
key_lines() { grep -c "^# key [a-z_]*: " "$1" || true; }

# 1. no file: local rank 0 measures and writes one, with this node's key, the cost it
#    measured and the built-in thresholds; its directories are made; nothing else is left
file=$work/cache/a/node.conf
job "$file"
cost=$(policy cost)
if passed && [ "$(policy cost_from)" = local-rank-0 ] && [ "$(policy thresholds_from)" = defaults ] &&
	[ "$(key_lines "$file")" = 5 ] && grep -qx "# key kernel: $kernel" "$file" &&
	grep -q "btl:smx: calibration: $file: missing .*measured at .*, written$" <<<"$out" &&
	[ "$(ls -A "$(dirname "$file")")" = node.conf ] &&
	awk -F= -v c="$cost" '$1 == "btl_smx_single_copy_cost" { d = $2 - c * 100; ok = d * d <= 1 }
		END { exit !ok }' "$file"; then
	echo "ok: no file: measured ($cost memcpys) and written, with the key and that cost"
else
	fail "no file: want p2p PASS, cost_from=local-rank-0, a file with 5 key lines and cost $cost: $out $(cat "$file" 2>&1)"
fi
[ -f "$file" ] || { fail "no file to go on with"; exit $status; }

# 2. a current file: its values are used, nothing measured, nothing written
set_thresholds "$file" 12345 54321
set_value btl_smx_single_copy_cost 123 "$file"
cp "$file" "$work/edited.conf"
job "$file"
got="$(policy cost) $(policy cost_from) $(policy thresholds_from) $(policy '[a-z0-9]*\.eager_limit') $(policy '[a-z0-9]*\.single_copy_min')"
if passed && [ "$got" = "1.23 file file 12345 54321" ] && cmp -s "$file" "$work/edited.conf" &&
	grep -q "btl:smx: calibration: $file: read$" <<<"$out"; then
	echo "ok: a current file: its cost and thresholds used, not measured, file untouched"
else
	fail "current file: want '1.23 file file 12345 54321', got '$got', and the file untouched: $out"
fi

# 3. values set as MCA parameters win over the file's, one by one
job "$file" --mca btl_smx_eager_limit 9000 --mca btl_smx_single_copy_cost 77
got="$(policy cost) $(policy cost_from) $(policy '[a-z0-9]*\.eager_limit') $(policy '[a-z0-9]*\.single_copy_min')"
if passed && [ "$got" = "0.77 parameter 9000 54321" ]; then
	echo "ok: parameters win over the file (generic eager limit, cost); the file's other values stay"
else
	fail "parameters over the file: want '0.77 parameter 9000 54321', got '$got': $out"
fi

# 4. a stale key (another kernel; no key at all, as smx-tune's plain output): measured
#    again and rewritten with this node's key, the file's thresholds dropped
stale() { # stale WHAT: the file prepared, runs and judges
	job "$file"
	if passed && [ "$(policy cost_from)" = local-rank-0 ] && [ "$(policy thresholds_from)" = defaults ] &&
		grep -q "btl:smx: calibration: $file: stale (.*measured at .*, rewritten$" <<<"$out" &&
		grep -qx "# key kernel: $kernel" "$file" && [ "$(key_lines "$file")" = 5 ] &&
		! grep -q 12345 "$file" && [ "$(ls -A "$(dirname "$file")")" = node.conf ]; then
		echo "ok: a stale file ($1): measured again and rewritten"
	else
		fail "stale file ($1): want cost_from=local-rank-0, defaults, the file rewritten: $out $(cat "$file")"
	fi
}
sed "s/^# key kernel: .*/# key kernel: 0.0.0-stale/" "$work/edited.conf" >"$file"
stale "kernel 0.0.0-stale"
grep -q "its key's kernel is '0.0.0-stale', here '$kernel'" <<<"$out" ||
	fail "the stale file's note does not say which part of the key differs: $out"
grep -v "^# key " "$work/edited.conf" >"$file"
stale "no key lines"

# 5. a corrupt file: one message naming the file and the line, the job runs on without it
#    (measured, built-in thresholds), the file left as it is
corrupt() { # corrupt WHAT LINE-NUMBER ERROR-PATTERN
	cp "$file" "$work/corrupt.conf"
	job "$file"
	if passed && [ "$(grep -c "btl/smx cannot use the calibration file of host" <<<"$out")" = 1 ] &&
		grep -q "^ *File: *$file$" <<<"$out" && grep -q "^ *Line: *$2$" <<<"$out" &&
		grep -q "^ *Error: .*$3" <<<"$out" &&
		[ "$(policy cost_from)" = local-rank-0 ] && [ "$(policy thresholds_from)" = defaults ] &&
		cmp -s "$file" "$work/corrupt.conf"; then
		echo "ok: a corrupt file ($1) is named once with its line $2, the job runs on, the file is left"
	else
		fail "corrupt file ($1): want one message naming $file, line $2, p2p PASS on the defaults, the file untouched: $out"
	fi
}
sed '9a this is not a parameter' "$work/edited.conf" >"$file"
corrupt "a line in neither form" 10 "not a 'name=value' line"
sed 's/^btl_smx_eager_limit_l3=.*/btl_smx_eager_limit_l3=12/' "$work/edited.conf" >"$file"
corrupt "an eager limit below ob1's headers" "$(line_of "$file" '^btl_smx_eager_limit_l3=')" \
	"btl_smx_eager_limit_l3=12: expected 128 or more"
sed 's/^btl_smx_eager_limit_busy=.*/btl_smx_budget_kb=4096/' "$work/edited.conf" >"$file"
corrupt "a parameter no calibration file sets" "$(line_of "$file" '^btl_smx_budget_kb=')" \
	"btl_smx_budget_kb is no parameter a calibration file sets"

# 6. where the file cannot be written the job runs on, measured, and nothing is written:
#    a directory under a regular file, one in /proc, a read-only file system (root may
#    write anywhere else)
unwritable() { # unwritable WHAT FILE
	job "$2"
	if passed && [ "$(policy cost_from)" = local-rank-0 ] && [ ! -e "$2" ] &&
		grep -q "btl:smx: calibration: $2: .*, not written (.*): the numbers serve this job only$" <<<"$out"; then
		echo "ok: $1: the job runs on the measured cost, nothing written, a note at verbose info"
	else
		fail "$1: want p2p PASS, cost_from=local-rank-0, no $2 and a note: $out"
	fi
}
touch "$work/plain"
unwritable "a directory that is a regular file" "$work/plain/node.conf"
[ -f "$work/plain" ] && [ ! -s "$work/plain" ] || fail "$work/plain was changed"
unwritable "a directory in /proc" "/proc/smx-calibration/node.conf"
if [ "$(id -u)" != 0 ]; then
	mkdir "$work/ro" && chmod 0555 "$work/ro"
	unwritable "a read-only directory" "$work/ro/node.conf"
	chmod 0755 "$work/ro"
elif mkdir "$work/ro" && unshare -m true 2>/dev/null; then
	# a read-only tmpfs, mounted in a mount namespace of the job's own
	out=$(unshare -m sh -c 'mount -t tmpfs -o ro tmpfs "$1" && shift && exec "$@"' sh "$work/ro" \
		"${launch[@]}" $(smx_config_args smx-cma) --mca btl_base_verbose info \
		--mca btl_smx_calibration_file "$work/ro/node.conf" "$build/tests/mpi/p2p" 2>&1 | tr -d '\000')
	if passed && [ "$(policy cost_from)" = local-rank-0 ] &&
		grep -q "btl:smx: calibration: $work/ro/node.conf: .*, not written (Read-only file system)" <<<"$out"; then
		echo "ok: a read-only file system: the job runs on the measured cost, nothing written"
	else
		fail "read-only file system: want p2p PASS, cost_from=local-rank-0 and 'not written (Read-only file system)': $out"
	fi
else
	echo "ok: (root, and no mount namespace here: the read-only case is left to the two above)"
fi

# 7. turned off: nothing read or written anywhere (not in the cache directory, not as a
#    file named "none" where the job runs), the cost measured
mkdir "$work/cwd"
cd "$work/cwd"
job none
cd - >/dev/null
if passed && [ "$(policy calibration)" = none ] && [ "$(policy cost_from)" = local-rank-0 ] &&
	grep -q "btl:smx: calibration: btl_smx_calibration_file: none;" <<<"$out" &&
	[ ! -e "$XDG_CACHE_HOME" ] && [ -z "$(ls -A "$work/cwd")" ]; then
	echo "ok: btl_smx_calibration_file none: measured, no file read or written"
else
	fail "calibration off: want calibration=none, cost_from=local-rank-0, no $XDG_CACHE_HOME, nothing in the job's directory ($(ls -A "$work/cwd")): $out"
fi

# 8. by default ('auto', as ompi_info says) the file is the node's under the user's cache
#    directory: $XDG_CACHE_HOME, else ~/.cache
info=$(ompi_info --param btl smx --level 9 --parsable)
job ""
default=$XDG_CACHE_HOME/ompi-smx/$(hostname).conf
if passed && grep -qx "mca:btl:smx:param:btl_smx_calibration_file:value:auto" <<<"$info" &&
	[ "$(policy calibration)" = "$default" ] && [ "$(key_lines "$default")" = 5 ]; then
	echo "ok: the default file ('auto') is \$XDG_CACHE_HOME/ompi-smx/<host>.conf"
else
	fail "default file: want 'auto' in ompi_info and $default written: $(grep calibration_file <<<"$info") $out"
fi
home=$work/home
mkdir "$home"
out=$(env -u XDG_CACHE_HOME HOME="$home" "${launch[@]}" $(smx_config_args smx-cma) \
	--mca btl_base_verbose info "$build/tests/mpi/p2p" 2>&1 | tr -d '\000')
if passed && [ "$(policy calibration)" = "$home/.cache/ompi-smx/$(hostname).conf" ] &&
	[ "$(key_lines "$home/.cache/ompi-smx/$(hostname).conf")" = 5 ]; then
	echo "ok: without XDG_CACHE_HOME it is ~/.cache/ompi-smx/<host>.conf"
else
	fail "default file without XDG_CACHE_HOME: want $home/.cache/ompi-smx/<host>.conf: $out"
fi

# 9. contrib/smx-tune calibrate: a parameter file of measured thresholds becomes this
#    node's calibration file (key and cost from btl/smx), and btl/smx uses it
tuned=$work/smx-tuned.conf
{
	echo "# Open MPI MCA parameters for btl/smx, measured on this node by contrib/smx-tune."
	for cls in l2 l3 package numa remote; do
		echo "btl_smx_single_copy_min_$cls=65536"
	done
	echo "btl_smx_single_copy_window_max=off"
} >"$tuned"
file=$work/tuned/node.conf
if "$top/contrib/smx-tune" calibrate "$tuned" --calibration-file "$file" >"$work/calibrate.log" 2>&1; then
	job "$file"
	got="$(policy thresholds_from) $(policy '[a-z0-9]*\.single_copy_min') $(policy window_max)"
	if passed && [ "$got" = "file 65536 0" ] && [ "$(key_lines "$file")" = 5 ] &&
		grep -q "^btl_smx_single_copy_cost=[0-9]" "$file" && [ "$(policy cost_from)" = file ]; then
		echo "ok: smx-tune calibrate writes the node's file from its thresholds; btl/smx uses them"
	else
		fail "smx-tune calibrate: want 'file 65536 0' and the cost from the file, got '$got': $out $(cat "$file")"
	fi
else
	fail "smx-tune calibrate failed: $(cat "$work/calibrate.log")"
fi
# ... by default into btl/smx's own file (section 8's)
if "$top/contrib/smx-tune" calibrate "$tuned" >"$work/calibrate.log" 2>&1 &&
	[ "$(grep -c '^btl_smx_single_copy_min_[a-z0-9]*=65536$' "$default")" = 5 ] &&
	[ "$(key_lines "$default")" = 5 ]; then
	echo "ok: smx-tune calibrate without --calibration-file writes btl/smx's own file"
else
	fail "smx-tune calibrate into $default: $(cat "$work/calibrate.log") $(cat "$default")"
fi
exit $status
