# tests/lib.sh: what the test scripts (tests/check-*.sh) share. Source it first:
#   . "$(dirname "$0")/lib.sh"
# It sets top (the checkout: $SMX_TOP, or this file's parent directory) and status=0, and
# defines fail MESSAGE (prints "FAIL: MESSAGE" and sets status=1; a script ends with
# `exit $status`) and smx_root_args (mpirun's --allow-run-as-root when run as root, for
# `args+=($(smx_root_args))`).
# SPDX-License-Identifier: BSD-3-Clause
top=${SMX_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
status=0

fail() { echo "FAIL: $*"; status=1; }

smx_root_args() {
	if [ "$(id -u)" = 0 ]; then
		echo --allow-run-as-root
	fi
}
