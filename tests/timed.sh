#!/bin/sh
# tests/timed.sh TEST [ARGS...]: how `make check` runs each test (LOG_COMPILER): the test
# as it is, its log ended by one line saying how long it took, which contrib/check.sh
# gathers into a table after the run (CI has a time budget; this says where it goes).
# SPDX-License-Identifier: BSD-3-Clause
start=$(date +%s)
"$@"
rc=$?
echo "timed: ${1##*/} took $(($(date +%s) - start)) s, exit $rc"
exit $rc
