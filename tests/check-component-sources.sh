#!/usr/bin/env bash
# Each component's in-tree Makefile.am (for dropping it into an Open MPI source tree) must
# list the same sources as the project's top-level Makefile.am, or one of the two builds rots.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=${SMX_TOP:-$(cd "$(dirname "$0")/.." && pwd)}

# Sources of variable VAR in FILE, one per line, sorted, without directory.
sources_of() {
	local file=$1 var=$2
	sed -n "/^$var *=/,/^[[:space:]]*\$/p" "$file" | tr ' \t\\' '\n\n\n' |
		grep -E '\.(c|h|cc)$' | xargs -n1 basename | sort
}

status=0
for comp in btl/smx:mca_btl_smx smsc/knemlike:mca_smsc_knemlike; do
	dir=opal/mca/${comp%%:*}
	lib=${comp##*:}
	intree=$(sources_of "$top/$dir/Makefile.am" "lib${lib}_la_sources")
	ours=$(sources_of "$top/Makefile.am" "${lib}_la_SOURCES")
	if [ -z "$intree" ] || [ "$intree" != "$ours" ]; then
		echo "FAIL: $dir/Makefile.am and Makefile.am list different sources for $lib:"
		diff <(echo "$intree") <(echo "$ours") || true
		status=1
	else
		echo "ok: $dir: $(echo "$intree" | wc -l) sources in both builds"
	fi
	for f in $intree; do
		[ -f "$top/$dir/$f" ] || { echo "FAIL: $dir/$f is listed but missing"; status=1; }
	done
done
exit $status
