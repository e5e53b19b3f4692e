#!/usr/bin/env bash
# contrib/quickstart.sh: set everything up, then run the project's main job: the benchmark
# with the transport configurations side by side in one run, and the comparison table.
#
# Until btl/smx carries traffic, the job compares Open MPI's stock configurations alone
# (btl/sm with smsc/cma single copy, and btl/sm with no single copy).
# Options are passed to contrib/setup.sh (e.g. --with-ompi=DIR).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/setup.sh" "$@"
. "$top/contrib/env.sh"

csv="$SMX_BUILD/quickstart.csv"
echo "== main job: ping-pong, 2 ranks, off-cache, configurations interleaved; CSV in $csv =="
exec "$top/tests/bench/run-bench" --np 2 --mode pingpong --quick \
	--preset sm-cma --preset sm-nosc --baseline sm-cma --csv "$csv"
