#!/usr/bin/env bash
# The parameter tables of docs/using-smx.md and docs/using-knemlike.md must say what the
# installed components' ompi_info says (contrib/param-docs --check): a default, help text,
# type or level changed in the code but not in the docs, a parameter added or gone, or a
# row edited by hand, each named. The check must be able to fail: a copy of the docs with
# one default edited by hand is refused, naming that parameter.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
: "${SMX_OMPI_PREFIX:?run through make check, or source contrib/env.sh}"
ompi_info=$SMX_OMPI_PREFIX/bin/ompi_info
param_docs=("$SMX_TOP/contrib/param-docs" --check --ompi-info "$ompi_info")

if "${param_docs[@]}" --top "$SMX_TOP"; then
	echo "ok: the parameter tables in docs/ match ompi_info"
else
	fail "the parameter tables in docs/ differ from ompi_info (above): run contrib/param-docs"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/docs"
cp "$SMX_TOP/docs/using-smx.md" "$SMX_TOP/docs/using-knemlike.md" "$work/docs/"
sed -i 's/^\(| `btl_smx_max_frags` | [^|]* | \)`[^`]*`/\1`999999`/' "$work/docs/using-smx.md"
if cmp -s "$SMX_TOP/docs/using-smx.md" "$work/docs/using-smx.md"; then
	fail "could not edit btl_smx_max_frags's row in a copy of docs/using-smx.md"
elif out=$("${param_docs[@]}" --top "$work" 2>&1); then
	fail "a default edited by hand went unnoticed"
elif grep -q "btl_smx_max_frags: default is '\`999999\`' in the docs" <<<"$out"; then
	echo "ok: a default edited by hand is named"
else
	fail "the edited row was not named:"
	echo "$out"
fi
exit $status
