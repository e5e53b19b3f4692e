#!/usr/bin/env bash
# contrib/smx-tune on this machine, with a small budget: the unit tests on recorded data;
# a short sweep whose parameter file Open MPI accepts (the .conf reader and mpirun --tune)
# and whose thresholds sit at the crossovers in the recorded data; valid PNG figures; an
# interrupted sweep resumes without measuring a finished job again; clear refusals (a
# mechanism that is missing here, binding to CPUs this machine lacks); compare mode
# prints a gain per class; the calibration file's subcommand, gone with the file, is
# refused with what to do instead. Numbers are not judged: only that the file follows
# from them.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$SMX_TOP/build}
py=/usr/bin/python3 # Debian's, where python3-matplotlib is installed (contrib/setup.sh)
tune=("$SMX_TOP/contrib/smx-tune")
bench=$build/tests/bench/smx_bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ok() { echo "ok: $*"; }
launch=(mpirun -np 2)
launch+=($(smx_root_args))

echo "== unit tests on recorded data"
(cd "$SMX_TOP/tests/tune" && "$py" -m unittest test_smx_tune) || fail "unit tests"

# A short sweep: 4 sizes around the eager limits, 3 repetitions, small jobs.
sweep=(--budget 60 --reps 3 --samples 3 --target-mb 8 --sizes 16K,64K,256K,1M)
echo "== short sweep: ${sweep[*]}"
start=$SECONDS
if "${tune[@]}" "${sweep[@]}" --out "$work/sweep" >"$work/sweep.log" 2>&1; then
	ok "sweep finished in $((SECONDS - start)) s"
else
	fail "sweep failed"; cat "$work/sweep.log"
fi
[ $((SECONDS - start)) -le 90 ] || fail "sweep took $((SECONDS - start)) s on a 60 s budget"
conf=$work/sweep/smx-tuned.conf
[ -f "$conf" ] || { fail "no parameter file"; cat "$work/sweep.log"; exit 1; }

if [ -e /dev/knemlike ]; then
	ok "knemlike's device exists here: not checking its report as unavailable"
elif grep -q "mechanism knemlike: unavailable" "$work/sweep.log" &&
	grep -q "knemlike (unavailable: " "$conf"; then
	ok "knemlike reported unavailable (log and file header), sweep went on"
else
	fail "knemlike not reported as unavailable"
fi
grep -q "^# date: " "$conf" && grep -q "^# machine: " "$conf" && grep -q "double us" "$conf" ||
	fail "the file's header lacks the machine, the date or the measurements"

# Open MPI accepts the file: the openmpi-mca-params.conf reader (through
# mca_base_param_files; ompi_info of Open MPI 5.0.7 ignores --tune) and mpirun --tune.
mapfile -t params < <(grep -E '^btl_smx_single_copy_min_[a-z0-9]+=' "$conf")
[ ${#params[@]} -gt 0 ] || fail "the file sets no threshold"
# it pins thresholds (a size, or never) and the mechanism, nothing else: eager limits
# stay measured
others=$(grep -Ev '^(#|$|btl_smx_single_copy_min_[a-z0-9]+=(never|[1-9][0-9]*)$|smsc=[a-z]+$)' "$conf" || true)
[ -z "$others" ] && ok "the file pins thresholds only (${params[*]})" ||
	fail "the file has lines other than thresholds (a size or never) and smsc: $others"
info=$(OMPI_MCA_mca_base_param_files="$conf" ompi_info --param btl smx --level 9 --parsable)
for p in "${params[@]}"; do
	name=${p%%=*} value=${p#*=}
	if grep -q "^mca:btl:smx:param:$name:value:$value$" <<<"$info" &&
		grep -q "^mca:btl:smx:param:$name:source:file ($conf:" <<<"$info"; then
		ok "ompi_info reads $name=$value from the file"
	else
		fail "ompi_info does not take $name=$value from $conf"
	fi
done
out=$("${launch[@]}" --tune "$conf" --mca btl smx,self "$bench" --sizes 64K --samples 1 \
	--target-mb 1 --print-cvar btl_smx_policy 2>&1) || { fail "mpirun --tune failed"; echo "$out"; }
# btl/smx's policy as rank 0 built it (MPI_T, read before finalize: its peer's ways as it
# started them): the class of its peer, that class's single-copy threshold, and the way of
# each size range of the peer's messages. Ranges from 64 KiB (above a fragment: never
# eager) go by single copy from the threshold on, by double copy below it (never: all).
policy=$(sed -n 's/^# cvar 0 btl_smx_policy //p' <<<"$out" | tr ' ' '\n')
peer_cls=$(sed -n 's/^peer1=//p' <<<"$policy")
ways=$(sed -n 's/^peer1\.ways=//p' <<<"$policy")
applied=0
for p in "${params[@]}"; do
	name=${p%%=*} value=${p#*=} cls=${p%%=*}
	cls=${cls#btl_smx_single_copy_min_}
	[ "$cls" = "$peer_cls" ] || continue
	# the ways the threshold gives the ranges from 64k ('4k:e,...,8m:d' -> "64k:d ...")
	want=$(awk -v t="$value" 'BEGIN { n = split("64k 128k 256k 512k 1m 2m 4m 8m", r, " ")
		for (i = 1; i <= n; i++) { start = 65536 * 2 ^ (i - 1)
			printf "%s%s:%s", (i > 1 ? " " : ""), r[i], (t != "never" && start >= t + 0) ? "s" : "d" } }')
	got=$(tr ',' '\n' <<<"$ways" | grep -E '^(64k|128k|256k|512k|1m|2m|4m|8m):' | paste -sd' ')
	if grep -qx "$cls.single_copy_min=$value" <<<"$policy" && [ "$got" = "$want" ]; then
		ok "mpirun --tune: btl/smx pins single copy from $value for class $cls (ways $got)"
		applied=$((applied + 1))
	else
		fail "mpirun --tune did not apply $p: $(grep "^$cls\." <<<"$policy" | paste -sd' ')," \
			"ways '$got' (want '$want')"
	fi
done
# The two ranks' class is one of the file's (the sweep measured it): at least one value
# must have been seen in use, or nothing above was checked.
[ "$applied" -gt 0 ] || { fail "mpirun --tune: no class of the file seen in btl/smx's output"; echo "$out"; }

echo "== thresholds against the recorded data"
"$py" "$SMX_TOP/tests/tune/check_sweep.py" "$work/sweep" || fail "thresholds do not follow from the data"

echo "== figures"
"$py" - "$work/sweep"/*.png <<'EOF' || fail "figures"
import sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
paths = sys.argv[1:]
assert any(p.endswith("-summary.png") for p in paths), "no summary figure"
for p in paths:
    with open(p, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", p + ": not a PNG"
    h, w = plt.imread(p).shape[:2]
    assert h > 100 and w > 100, p + ": %dx%d" % (w, h)
    print("ok: %s: PNG, %dx%d" % (p.rsplit("/", 1)[1], w, h))
EOF

echo "== interrupted sweep resumes"
args=(--budget 60 --reps 2 --samples 3 --target-mb 8 --sizes 16K,256K,1M --out "$work/int")
"${tune[@]}" "${args[@]}" >"$work/int.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
	[ "$(wc -l 2>/dev/null <"$work/int/units.csv" || echo 0)" -ge 2 ] && break
	sleep 0.1
done
kill -TERM "$pid" 2>/dev/null || true
rc=0
wait "$pid" || rc=$?
kept=$(($(wc -l <"$work/int/units.csv") - 1))
if [ "$rc" = 130 ] && [ "$kept" -ge 1 ] && grep -q "the same command to resume" "$work/int.log"; then
	ok "interrupted (exit 130) with $kept finished job(s) kept"
else
	fail "interrupt: exit $rc, $kept jobs kept"; cat "$work/int.log"
fi
head -n $((kept + 1)) "$work/int/units.csv" >"$work/kept.csv"
"${tune[@]}" "${args[@]}" >"$work/resume.log" 2>&1 || { fail "resume failed"; cat "$work/resume.log"; }
total=$(($(wc -l <"$work/int/units.csv") - 1))
if grep -q "resuming: $kept of 4 jobs already done" "$work/resume.log" && [ "$total" = 4 ] &&
	[ "$(head -n $((kept + 1)) "$work/int/units.csv")" = "$(cat "$work/kept.csv")" ]; then
	ok "resumed: $kept kept, $((total - kept)) measured, 4 in all"
else
	fail "resume: expected 4 jobs with the $kept kept ones unchanged, have $total"
	cat "$work/resume.log"
fi

echo "== refusals"
# expect_refusal NAME PATTERN ARGS...: exit 2 and PATTERN in the output
expect_refusal() {
	local name=$1 pattern=$2 rc=0
	shift 2
	"${tune[@]}" "$@" >"$work/refusal.log" 2>&1 || rc=$?
	if [ "$rc" = 2 ] && grep -Eq "$pattern" "$work/refusal.log"; then
		ok "$name"
	else
		fail "$name: exit $rc"; cat "$work/refusal.log"
	fi
}
expect_refusal "unknown mechanism" "unknown single-copy mechanism 'foo'" \
	--mechanisms cma,foo --out "$work/r1"
expect_refusal "budget too small" "budget too small to measure anything" \
	--budget 2 --out "$work/r2"
if [ ! -e /dev/knemlike ]; then
	expect_refusal "only a missing mechanism asked for" \
		"no single-copy mechanism works here \(knemlike: " --mechanisms knemlike \
		--budget 60 --sizes 64K --out "$work/r3"
fi
expect_refusal "pairs of CPUs from another machine's topology" \
	"binding two ranks to CPUs .* is impossible|btl/smx classifies CPUs" \
	--topology "$SMX_TOP/tests/topologies/numa-per-l3.xml" --budget 60 --sizes 64K --out "$work/r4"

echo "== the calibration file's subcommand is gone"
expect_refusal "calibrate: no calibration file any more, the parameter file instead" \
	"btl/smx has no calibration file any more.*mca-params.conf" calibrate "$conf"

echo "== compare against stock btl/sm"
if "${tune[@]}" compare "$conf" --budget 40 --reps 2 --samples 3 --target-mb 8 \
	--sizes 16K,256K --out "$work/cmp" >"$work/cmp.log" 2>&1 &&
	grep -Eq "^  class [a-z0-9]+: gain [0-9.]+x" "$work/cmp.log" &&
	[ "$(head -c 8 "$work/cmp/compare.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
	ok "compare: $(grep -E '^  class [a-z0-9]+: gain' "$work/cmp.log" | tr -s ' ' | paste -sd';')"
else
	fail "compare"; cat "$work/cmp.log"
fi
exit $status
