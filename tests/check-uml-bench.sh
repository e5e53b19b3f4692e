#!/usr/bin/env bash
# knemlike's copy at native speed, a short run: tests/kmod/run-uml-bench boots User-mode
# Linux once (built from Debian's linux-source-6.1 with MMU notifiers, cached under
# ~/.cache/smx; about 4 minutes the first time) and prints its tables (copies, attachments), 4 KiB to 16 MiB.
# Every copy's bytes are checked by kmod_copybench (a wrong byte fails the run); here the
# table must also hold every size with a number in every column, so that a module that
# stopped holding pages, or a mechanism that stopped working, shows. Timings are printed,
# not judged: one short boot of a noisy VM is not evidence (kmod/README.md has the table
# of 5 boots).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! "$SMX_TOP/tests/kmod/run-uml-bench" --boots 1 --reps 3 --max-mib 16 --out "$out"; then
	echo "FAIL: run-uml-bench did not run to its end"
	exit 1
fi
# The output holds two tables (copies, then attachments), each a block of rows separated
# by a blank line: each must have all 7 sizes and a time in every mechanism's column.
table() { awk -v n="$1" '/^\| size /{t++} t==n && /^\| [0-9]+ [KM]iB \|/' "$out"; }
for n in 1 2; do
	rows=$(table $n | wc -l)
	if [ "$rows" != 7 ]; then
		echo "FAIL: table $n has $rows sizes, expected 7 (4 KiB to 16 MiB)"
		cat "$out"
		exit 1
	fi
done
if table 1 | cut -d'|' -f3-10 | grep -q -e nan -e ' - '; then
	echo "FAIL: a copy mechanism has no time: the module could not hold pages, or a copy failed"
	exit 1
fi
if table 2 | cut -d"|" -f3-9 | grep -q -e nan -e ' - '; then
	echo "FAIL: an attachment column has no time: the module refused an attachment, or a copy through it failed"
	exit 1
fi
echo "ok: UML benchmark ran: 7 sizes in both tables, every mechanism timed, every copy's bytes checked"
