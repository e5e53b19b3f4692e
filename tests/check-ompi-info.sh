#!/usr/bin/env bash
# The installed Open MPI must find both components and show their parameters, and what
# it loads must be what this tree built (a stale install would make every later test lie).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
: "${SMX_OMPI_PREFIX:?run through make check, or source contrib/env.sh}"
: "${SMX_BUILD:?}"
ompi_info=$SMX_OMPI_PREFIX/bin/ompi_info
: "${SMX_COMPONENT_DIR:=$("$ompi_info" --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')}"

for so in mca_btl_smx.so mca_smsc_knemlike.so; do
	built=$SMX_BUILD/.libs/$so
	installed=$SMX_COMPONENT_DIR/$so
	if [ ! -f "$installed" ]; then
		fail "$installed is not installed (run make install)"
	elif [ ! -f "$built" ]; then
		fail "$built is not built (run make in $SMX_BUILD)"
	elif ! cmp -s "$built" "$installed"; then
		fail "$installed differs from the freshly built $built (run make install)"
	fi
done

# A component is a shared object that may leave symbols for Open MPI to resolve when it is
# loaded; one of its own left undefined (a function renamed on one side only) would fail
# only then, in the first job that calls it. Both name theirs mca_btl_smx_/mca_smsc_knemlike_.
for so in mca_btl_smx.so mca_smsc_knemlike.so; do
	own=$(nm -D --undefined-only "$SMX_BUILD/.libs/$so" | awk '{print $NF}' |
		grep -E '^(mca_btl_smx_|mca_smsc_knemlike_|smx_|knemlike_)' || true)
	[ -z "$own" ] || fail "$so leaves symbols of its own undefined: $(echo $own)"
done

components=$("$ompi_info" 2>&1)
grep -Eq 'MCA btl: smx \(' <<<"$components" || fail "ompi_info does not list 'MCA btl: smx'"
grep -Eq 'MCA smsc: knemlike \(' <<<"$components" || fail "ompi_info does not list 'MCA smsc: knemlike'"

check_param() {
	local fw=$1 comp=$2 param=$3 out
	out=$("$ompi_info" --param "$fw" "$comp" --level 9 2>&1)
	grep -q "MCA $fw $comp: parameter \"$param\"" <<<"$out" ||
		fail "ompi_info --param $fw $comp --level 9 does not show $param"
}
check_param btl smx btl_smx_pair_ring_size
check_param btl smx btl_smx_pair_rings_max
check_param btl smx btl_smx_pair_ring_after
check_param btl smx btl_smx_frag_size
check_param btl smx btl_smx_max_frags
check_param btl smx btl_smx_budget_kb
check_param btl smx btl_smx_eager_limit
check_param btl smx btl_smx_eager_limit_l3
check_param btl smx btl_smx_single_copy_min
check_param btl smx btl_smx_single_copy_min_l3
check_param btl smx btl_smx_skew
check_param btl smx btl_smx_nontemporal
check_param btl smx btl_smx_push_max
check_param smsc knemlike smsc_knemlike_priority
check_param smsc knemlike smsc_knemlike_device
check_param smsc knemlike smsc_knemlike_cache_max_entries
check_param smsc knemlike smsc_knemlike_cache_max_mb
check_param smsc knemlike smsc_knemlike_attach_max
check_param smsc knemlike smsc_knemlike_map
check_param smsc knemlike smsc_knemlike_map_max_mb
# performance variables (MPI_T), shown at level 9 beside the parameters
info=$("$ompi_info" --param btl smx --level 9 2>&1)
for pvar in gets_single_copy gets_double_copy copy_switches sends_queued frags_peak \
	pair_rings skew_late skew_caught_up skew_eager_sends streamed_copies store_switches \
	pushes_ahead pushes_parked; do
	grep -q "MCA btl smx: performance \"btl_smx_$pvar\"" <<<"$info" ||
		fail "ompi_info --param btl smx --level 9 does not show the performance variable btl_smx_$pvar"
done
# ... and none of those the switch by measurement replaced (c10d8d0): a component that
# still shows one is an old build
for gone in calibration_file single_copy_cost single_copy_cost_max busy_ranks busy_transfers \
	eager_limit_busy single_copy_min_busy exchange_push single_copy_oversubscribed \
	adaptive_copy single_copy_window_max eager_limit_window single_copy_window_cost_max \
	exchange_pushes skew_switches; do
	! grep -q "MCA btl smx: [a-z]* \"btl_smx_$gone\"" <<<"$info" ||
		fail "ompi_info --param btl smx --level 9 still shows btl_smx_$gone, which btl/smx no longer has"
done
# Help is one or two lines per parameter; the why lives in docs/using-smx.md. The bound
# was 12000 characters; btl_smx_adaptive_copy and its counter, one line of help each, took
# 12338; btl_smx_single_copy_cost and btl_smx_calibration_file, one line each, 13032;
# the skew switch's three parameters and four counters, one short line each, 14521;
# btl_smx_nontemporal and its two counters, one short line each, 15213; btl_smx_push_max
# and its two counters, one short line each, 15824; the switch by measurement (c10d8d0),
# the generic btl_smx_single_copy_min in, thirteen parameters and two counters out, 12463.
chars=$(wc -c <<<"$info")
[ "$chars" -le 13000 ] ||
	fail "ompi_info --param btl smx --level 9 prints $chars characters, more than 13000"

# ompi_info prints each default beside its help: a help that says it again ("Default: N")
# goes stale when the default moves. (smsc_knemlike_priority's help is Open MPI's own.)
stale=$("$ompi_info" --parsable --all --level 9 2>&1 |
	grep -E '^mca:(btl:smx|smsc:knemlike):param:[a-z0-9_]+:help:.*[Dd]efault:' |
	grep -v ':smsc_knemlike_priority:' || true)
[ -z "$stale" ] || fail "a parameter's help repeats its default, which ompi_info shows: $stale"

# Loading must not print errors (an unresolved symbol shows up here, not in the listing).
if grep -Ei 'unable to open|undefined symbol|error' <<<"$components" | grep -Ei 'smx|knemlike'; then
	fail "ompi_info reported an error loading a component"
fi
[ $status = 0 ] && echo "ok: ompi_info lists btl/smx and smsc/knemlike with their parameters"
exit $status
