#!/usr/bin/env bash
# The benchmark driver's parsing, medians and ratios.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$SMX_TOP/tests/bench"
exec python3 -m unittest -v test_run_bench
