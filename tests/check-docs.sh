#!/usr/bin/env bash
# What a script can check of the docs (README.md, docs/*.md, kmod/README.md): every commit
# they cite is a commit of this history (a measurement names the code it was taken on);
# every test `make check` runs has its line in docs/testing.md; every path under tests/,
# contrib/, kmod/ or our two components that they name in backquotes exists (a program by
# its source), and so does every function of ours they name; the README's table names the
# commit docs/performance.md gives for it, in the section it points to; how long the fast
# tier and the full run take is said in one place only (docs/testing.md, "How long it
# takes"), not in another doc, Makefile.am or a script's comment; no line of README.md or
# docs/ is longer than 100 characters outside tables, code and headings, no row of
# docs/testing.md's table longer than 160. Each check must be able to fail: a copy of the
# tree's docs with a fault of each kind is refused, each named.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"

in_git() { git -C "$SMX_TOP" rev-parse --git-dir >/dev/null 2>&1; }

# durations FILE...: each sentence that names the fast tier or the full run together with
# a duration (in a .md file outside code blocks and outside docs/testing.md's "How long
# it takes"; in Makefile.am and scripts, in comments)
durations() {
	awk '
	function flush(   n, i, s, t) {
		n = split(para, parts, /[.;] /)
		for (i = 1; i <= n; i++) {
			s = parts[i]; t = tolower(s)
			if (t ~ /fast tier|check-fast|full run|whole run|ci run|ci'\''s run|warm run|\.ci\/run|ci'\''s budget|make check([^-]|$)/ &&
			    t ~ /(^|[^a-z0-9_])[0-9][0-9,.]* ?(s|secs?|seconds?|min|mins|minutes?|h|hours?)([^a-z0-9_]|$)|under a minute|a few minutes|half an hour/)
				print file ": " substr(s, 1, 120)
		}
		para = ""
	}
	FNR == 1 { flush(); file = FILENAME; code = 0; skip = 0; md = file ~ /\.md$/ }
	md && /^```/ { flush(); code = !code; next }
	code { next }
	FILENAME ~ /docs\/testing\.md$/ && /^## / { flush(); skip = ($0 ~ /^## How long it takes/) }
	skip { next }
	{
		line = $0
		if (!md) {
			if (line !~ /^[ \t]*#/ || line ~ /^#!/) { flush(); next }
			sub(/^[ \t]*#+ ?/, "", line)
		}
		if (line ~ /^[ \t]*$/) { flush(); next }
		para = para " " line
	}
	END { flush() }' "$@"
}

# long_lines FILE...: lines over 100 characters outside tables, code blocks and headings
# (a line with a link's address or an image may be longer)
long_lines() {
	awk '/^```/ { code = !code; next }
	!code && !/^\|/ && !/^#/ && !/https?:\/\/|!\[/ && length($0) > 100 {
		print FILENAME ":" FNR ": " length($0) " characters"
	}' "$@"
}

# check_docs DIR: the checks above on the tree in DIR (a checkout, or a copy of its docs,
# Makefile.am and scripts); prints a line per fault and returns 1 if there was any.
check_docs() {
	local dir=$1 rc=0 ref t f fn out readme_ref pointer perf_ref perf_section
	local docs=("$dir"/README.md "$dir"/docs/*.md "$dir"/kmod/README.md)
	if in_git; then
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
	for f in $(grep -ohE '`(tests|contrib|kmod|opal/mca/btl/smx|opal/mca/smsc/knemlike)/[A-Za-z0-9_./*-]+`' "${docs[@]}" | tr -d '`' | sort -u); do
		f=${f%/}
		# shellcheck disable=SC2086 # a glob (tests/check-smx-*.sh) names files too
		compgen -G "$SMX_TOP/$f" >/dev/null || [ -e "$SMX_TOP/$f.c" ] || [ -e "$SMX_TOP/$f.cc" ] ||
			{ [ "$f" = tests/unit/smx_unit_tests ] && [ -d "$SMX_TOP/tests/unit" ]; } ||
			{ echo "no such file: $f"; rc=1; }
	done
	# Our functions and structs, named in backquotes: each must be in the code.
	for fn in $(grep -ohE '`(mca_btl_smx|smx|mca_smsc_knemlike|smsc_knemlike|knemlike)_[A-Za-z0-9_]+(\(\))?`' "${docs[@]}" |
		tr -d '`()' | sort -u); do
		grep -rqw --include='*.[ch]' --include='*.cc' --include='*.sh' --include='*.am' \
			--exclude=check-docs.sh -e "$fn" \
			"$SMX_TOP/opal" "$SMX_TOP/kmod" "$SMX_TOP/tests" "$SMX_TOP/contrib" ||
			{ echo "no such function or name in the code: $fn"; rc=1; }
	done
	# The README's table: the commit it names is the one docs/performance.md gives for it,
	# and the section performance.md points to holds that commit's table.
	readme_ref=$(sed -n '/^## Benchmark/,/^| /p' "$dir/README.md" | grep -oE '\b[0-9a-f]{7,12}\b' || true)
	readme_ref=${readme_ref%%$'\n'*}
	pointer=$(tr '\n' ' ' <"$dir/docs/performance.md" |
		grep -oE "The README's table +is the in-cache table of +\"[^\"]*\" below \([0-9a-f]+\)" || true)
	perf_section=$(sed -n 's/.* of *"\([^"]*\)" below.*/\1/p' <<<"$pointer")
	perf_ref=$(sed -n 's/.* below (\([0-9a-f]*\)).*/\1/p' <<<"$pointer")
	if [ -z "$readme_ref" ] || [ -z "$perf_ref" ]; then
		echo "the README's table and docs/performance.md must each name its commit ('$readme_ref', '$perf_ref')"
		rc=1
	elif [ "$readme_ref" != "$perf_ref" ]; then
		echo "the README's table is of $readme_ref, docs/performance.md says $perf_ref"
		rc=1
	elif ! awk -v h="## $perf_section" -v ref="$readme_ref" 'index($0, h) == 1 { on = 1; next }
		/^## / { on = 0 } on && index($0, ref) { found = 1 } END { exit !found }' \
		"$dir/docs/performance.md"; then
		echo "docs/performance.md's section \"$perf_section\" does not name $readme_ref, the README table's commit"
		rc=1
	fi
	# How long: said in one place.
	out=$(durations "$dir"/README.md "$dir"/docs/*.md "$dir"/Makefile.am "$dir"/tests/*.sh "$dir"/contrib/*.sh)
	[ -z "$out" ] || { sed 's/^/a duration stated outside docs\/testing.md'\''s "How long it takes": /' <<<"$out"; rc=1; }
	for t in "The fast tier" "The full run"; do
		grep -qE "^- \*\*$t\*\* .*[0-9][0-9,]* s\b" <<<"$(sed -n '/^## How long it takes/,/^## /p' \
			"$dir/docs/testing.md")" ||
			{ echo "docs/testing.md's \"How long it takes\" does not say how long: $t"; rc=1; }
	done
	# Lines a person can read.
	out=$(long_lines "$dir"/README.md "$dir"/docs/*.md)
	[ -z "$out" ] || { sed 's/^/a line too long: /' <<<"$out"; rc=1; }
	out=$(awk 'length($0) > 160 && /^\| `tests\// { print FILENAME ":" FNR ": " length($0) " characters" }' \
		"$dir/docs/testing.md")
	[ -z "$out" ] || { sed 's/^/a row of the tests'\'' table too long: /' <<<"$out"; rc=1; }
	return $rc
}

if out=$(check_docs "$SMX_TOP"); then
	[ -z "$out" ] || echo "$out"
	echo "ok: the docs' commits, tests, files and functions exist; the README's table and" \
		"docs/performance.md name one commit; the timings are said in one place; lines fit"
else
	echo "$out"
	fail "the docs name what is not there, or disagree (above)"
fi

# Must be able to fail: a copy of the tree's docs, Makefile.am and scripts, with one fault
# of each kind.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/docs" "$work/kmod" "$work/tests" "$work/contrib"
cp "$SMX_TOP"/docs/*.md "$work/docs/"
cp "$SMX_TOP/README.md" "$SMX_TOP/Makefile.am" "$work/"
cp "$SMX_TOP/kmod/README.md" "$work/kmod/"
cp "$SMX_TOP"/tests/*.sh "$work/tests/"
cp "$SMX_TOP"/contrib/*.sh "$work/contrib/"
echo "Measured at 0123abc9 with \`tests/check-nothing-here.sh\`." >>"$work/docs/performance.md"
echo "The copy goes through \`mca_btl_smx_no_such_function()\`." >>"$work/docs/design.md"
sed -i '/`tests\/check-docs.sh`/d' "$work/docs/testing.md"
printf '\n%s\n' "The fast tier takes under a minute here." >>"$work/docs/install.md"
sed -i '2a # (the full run: about 30 min)' "$work/tests/check-fast.sh"
sed -i 's/^- \*\*The full run\*\*/- The full run/' "$work/docs/testing.md"
printf '%s\n' "$(printf 'word %.0s' $(seq 1 30))" >>"$work/docs/using-smx.md"
printf '| `tests/check-nothing.sh` | %s |\n' "$(printf 'word %.0s' $(seq 1 40))" >>"$work/docs/testing.md"
other=
if in_git; then
	# a commit of this history that the section the README's table comes from does not name
	other=$(git -C "$SMX_TOP" rev-list --max-parents=0 HEAD | head -n 1 | cut -c1-7)
	sed -i "/^## Benchmark/,/^| /s/\b[0-9a-f]\{7,12\}\b/$other/" "$work/README.md"
fi
if out=$(check_docs "$work"); then
	fail "a copy of the docs with a fault of each kind went unnoticed"
else
	for want in "no such commit: 0123abc9" "no such file: tests/check-nothing-here.sh" \
		"no such function or name in the code: mca_btl_smx_no_such_function" \
		"not in docs/testing.md: tests/check-docs.sh" \
		"the README's table is of $other, docs/performance.md says" \
		"outside docs/testing.md's \"How long it takes\": $work/docs/install.md:  The fast tier takes under a minute here" \
		"outside docs/testing.md's \"How long it takes\": $work/tests/check-fast.sh:" \
		"does not say how long: The full run" \
		"a line too long: $work/docs/using-smx.md:" \
		"a row of the tests' table too long: $work/docs/testing.md:"; do
		if [[ $want == *"table is of "* ]] && ! in_git; then
			continue
		elif grep -qF "$want" <<<"$out"; then
			echo "ok: refused, naming it: ${want//$work\//}"
		elif in_git || [[ $want != *commit* ]]; then
			fail "not named: $want (got: $out)"
		fi
	done
fi
exit $status
