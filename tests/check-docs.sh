#!/usr/bin/env bash
# What a script can check of the docs (README.md, docs/*.md, kmod/README.md): every commit
# they cite is a commit of this history (a measurement names the code it was taken on);
# every test `make check` runs has its line in docs/testing.md; every path under tests/,
# contrib/, kmod/ or our two components that they name in backquotes exists (a program by
# its source). Each check must be able to fail: a copy of the docs with a made-up commit,
# a missing file and a test without its line is refused, each named.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# check_docs DIR: the checks above on the docs found in DIR (a checkout, or a copy of its
# docs); prints a line per fault and returns 1 if there was any.
check_docs() {
	local dir=$1 rc=0 ref t f
	local docs=("$dir"/README.md "$dir"/docs/*.md "$dir"/kmod/README.md)
	if git -C "$SMX_TOP" rev-parse --git-dir >/dev/null 2>&1; then
		# 7 to 12 hex digits with a letter and a digit, standing alone: a commit's name.
		for ref in $(grep -ohE '(^|[^0-9a-zA-Z_x/.-])[0-9a-f]{7,12}([^0-9a-zA-Z_-]|$)' "${docs[@]}" |
			grep -oE '[0-9a-f]{7,12}' | grep '[a-f]' | grep '[0-9]' | sort -u); do
			git -C "$SMX_TOP" cat-file -e "$ref^{commit}" 2>/dev/null ||
				{ echo "no such commit: $ref ($(grep -l "$ref" "${docs[@]}" | sed "s|^$dir/||" | tr '\n' ' '))"; rc=1; }
		done
	else
		echo "note: $SMX_TOP is not a git checkout (a release tarball): commit names not checked"
	fi
	for t in $(sed -n '/^TESTS = /,/^$/p' "$SMX_TOP/Makefile.am" | grep -oE 'tests/[^ \\]+'); do
		grep -qF "\`$t\`" "$dir/docs/testing.md" || { echo "not in docs/testing.md: $t"; rc=1; }
	done
	for f in $(grep -ohE '`(tests|contrib|kmod|opal/mca/btl/smx|opal/mca/smsc/knemlike)/[A-Za-z0-9_./-]+`' "${docs[@]}" | tr -d '`' | sort -u); do
		f=${f%/}
		[ -e "$SMX_TOP/$f" ] || [ -e "$SMX_TOP/$f.c" ] || [ -e "$SMX_TOP/$f.cc" ] ||
			{ [ "$f" = tests/unit/smx_unit_tests ] && [ -d "$SMX_TOP/tests/unit" ]; } ||
			{ echo "no such file: $f"; rc=1; }
	done
	return $rc
}

if out=$(check_docs "$SMX_TOP"); then
	[ -z "$out" ] || echo "$out"
	echo "ok: the docs' commits, tests and files exist"
else
	echo "$out"
	fail "the docs name what is not there (above)"
fi

# Must be able to fail.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/docs" "$work/kmod"
cp "$SMX_TOP"/docs/*.md "$work/docs/"
cp "$SMX_TOP/README.md" "$work/"
cp "$SMX_TOP/kmod/README.md" "$work/kmod/"
echo "Measured at 0123abc9 with \`tests/check-nothing-here.sh\`." >>"$work/docs/performance.md"
sed -i '/`tests\/check-docs.sh`/d' "$work/docs/testing.md"
if out=$(check_docs "$work"); then
	fail "a made-up commit, a missing file and a test without its line went unnoticed"
else
	for want in "no such commit: 0123abc9" "no such file: tests/check-nothing-here.sh" \
		"not in docs/testing.md: tests/check-docs.sh"; do
		if grep -qF "$want" <<<"$out"; then
			echo "ok: refused, naming it: $want"
		elif git -C "$SMX_TOP" rev-parse --git-dir >/dev/null 2>&1 || [[ $want != *commit* ]]; then
			fail "not named: $want (got: $out)"
		fi
	done
fi
exit $status
