#!/usr/bin/env bash
# What ob1 and MPI ask of btl/smx besides carrying data, on the host: ob1's dump of a
# communicator describes each smx endpoint; a message larger than its receive fails it
# with MPI_ERR_TRUNCATE, posted or not; under threads a send held back completes once its
# receiver took it. (The other btl/smx checks: tests/check-smx-*.sh.)
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SMX_TOP/tests/smx/lib.sh"
smx_programs dump truncate takenfirst
# ob1's dump of a communicator asks btl/smx about each peer (it crashed without btl_dump)
out=$("${launch[@]}" $(smx_config_args smx-cma) "$build/tests/smx/dump" 2>&1 | tr -d '\000' || true)
grep -q "^dump: returned 0" <<<"$out" &&
	grep -Eq "btl:smx: .* -> local rank 1 \(class [a-z0-9]+\): [0-9]+ messages through its queue, .*descriptors out" <<<"$out" &&
	echo "ok: ob1's dump describes the smx endpoint" ||
	fail "mca_pml_ob1_dump on smx: want the endpoint line and a normal return: $out"
# A message larger than its receive fails it with MPI_ERR_TRUNCATE, posted or not, its
# first bytes received: eager in one chunk (20000 into 10000), by rendezvous (100 KiB
# into 64 KiB), and eager in several chunks (100 KiB with every receiver late: ob1
# must see one segment, or it misses the truncation of a posted receive).
for t in "smx-cma 20000 10000" "smx-cma 102400 65536" "smx-skew-always 102400 65536"; do
	read -r cfg len rlen <<<"$t"
	out=$("${launch[@]}" $(smx_config_args "$cfg") "$build/tests/smx/truncate" "$len" "$rlen" \
		2>&1 | tr -d '\000' || true)
	if grep -q "^truncate: PASS" <<<"$out"; then
		echo "ok: $len bytes into a receive of $rlen on $cfg: MPI_ERR_TRUNCATE, posted or not"
	else
		fail "$len bytes into a receive of $rlen on $cfg: $out"
	fi
done
# Under MPI_THREAD_MULTIPLE a send held back by a full ring completes only once its
# receiver has taken it, not once written (takenfirst.c: the receiver makes exactly
# one progress call between; every byte checked). Before the rule (issue 59) it failed.
out=$("${launch[@]}" $(smx_config_args smx-cma) "$build/tests/smx/takenfirst" 2>&1 | tr -d '\000' || true)
if grep -q "^takenfirst: PASS" <<<"$out"; then
	echo "ok: under threads a send held back completes once its receiver took it"
else
	fail "a send held back, under threads: $out"
fi
exit $status
