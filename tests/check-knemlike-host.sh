#!/usr/bin/env bash
# smsc/knemlike on a host without the module: a job that asks for it explicitly gets a
# clear message saying why it cannot be used and runs on (without single copy); a job that
# does not ask is not bothered; a wrong MCA value is named. (With the module: the VM tests.)
# A preloaded shim (tests/smsc/knemlike_shim.c) plays a module of another ABI version, and
# a device file of mode 000 one the job may not open.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$SMX_TOP/build}
"$SMX_TOP/tests/mpi/run-suite" --build-only
prog=$build/tests/mpi/anysource
launch=(mpirun -np 2 --mca btl sm,self)
launch+=($(smx_root_args))
# Put before mpirun by a case that needs it (an environment, a privilege change).
wrap=()

# expect NAME PATTERNS ARGS...: the job must succeed and print each line of PATTERNS, a
# fixed string (or, with !PATTERN, must not print it).
expect() {
	local name=$1 patterns=$2 pattern out rc=0
	shift 2
	out=$(${wrap[@]+"${wrap[@]}"} "${launch[@]}" "$@" "$prog" 2>&1 | tr -d '\000') || rc=$?
	if [ $rc != 0 ] || ! grep -q "^anysource: PASS" <<<"$out"; then
		echo "FAIL: $name: the job itself failed (exit $rc)"; echo "$out" | tail -20; status=1
		return
	fi
	while IFS= read -r pattern; do
		if [ "${pattern:0:1}" = "!" ] && grep -qF -- "${pattern:1}" <<<"$out"; then
			echo "FAIL: $name: unexpected '${pattern:1}'"; echo "$out" | tail -20; status=1
			return
		elif [ "${pattern:0:1}" != "!" ] && ! grep -qF -- "$pattern" <<<"$out"; then
			echo "FAIL: $name: no '$pattern' in the output"; echo "$out" | tail -20; status=1
			return
		fi
	done <<<"$patterns"
	echo "ok: $name"
}

if [ -e /dev/knemlike ]; then
	echo "FAIL: this test expects a host without /dev/knemlike"
	exit 1
fi
expect "explicit request without the module says the device is missing" \
	"its device is missing" --mca smsc knemlike
expect "the message names the device" "Device: /nonexistent/knemlike" \
	--mca smsc knemlike --mca smsc_knemlike_device /nonexistent/knemlike
expect "a device that is not knemlike is reported as an interface mismatch" \
	"does not speak the interface" --mca smsc knemlike --mca smsc_knemlike_device /dev/null
expect "no message when knemlike was not asked for" "!knemlike" --mca smsc ^cma
expect "a negative cache limit is refused by name" "Parameter: smsc_knemlike_cache_max_entries" \
	--mca smsc_knemlike_cache_max_entries -1
expect "a negative attachment limit is refused by name" "Parameter: smsc_knemlike_attach_max" \
	--mca smsc_knemlike_attach_max -1

# The shim: open() of $fake gives /dev/null, whose GET_INFO answers ABI (ours + 1).
smsc_dir=$build/tests/smsc
mkdir -p "$smsc_dir"
shim=$smsc_dir/knemlike_shim.so
fake=$smsc_dir/knemlike-from-another-release
cc -O2 -Wall -Wextra -Werror -shared -fPIC -I"$SMX_TOP/kmod/include/uapi" -o "$shim" \
	"$SMX_TOP/tests/smsc/knemlike_shim.c" -ldl
abi=$(sed -n 's/^#define KNEMLIKE_ABI_VERSION[[:space:]]*\([0-9][0-9]*\).*/\1/p' \
	"$SMX_TOP/kmod/include/uapi/linux/knemlike.h")
[ -n "$abi" ] || { echo "FAIL: no KNEMLIKE_ABI_VERSION in the uapi header"; exit 1; }
# Selection shows how the job runs on: smsc/cma when it may, else no single copy at all.
verbose=(--mca smsc_base_verbose 100)

wrap=(env LD_PRELOAD="$shim" KNEMLIKE_SHIM_DEVICE="$fake")
expect "a module of another ABI version is refused, naming both versions; cma is used" \
	"Device: $fake
Error:  the loaded module speaks ABI $((abi + 1)), this component was built for ABI $abi
Open MPI will continue without knemlike single copy.
mca_smsc_base_select: selected shared-memory single-copy component: cma" \
	--mca smsc knemlike,cma --mca smsc_knemlike_device "$fake" "${verbose[@]}"

# A device file of mode 000. Root opens it anyway, so root runs the job without the
# capabilities that override file modes; where that cannot be done the shim refuses.
denied=$smsc_dir/knemlike-mode-000
rm -f "$denied"
: >"$denied"
chmod 000 "$denied"
opens() { "$@" sh -c 'exec 3<>"$1"' sh "$denied" 2>/dev/null; }
no_dac=(setpriv --inh-caps=-dac_override,-dac_read_search
	--bounding-set=-dac_override,-dac_read_search --)
if ! opens env; then
	wrap=()
	how="its mode"
elif command -v setpriv >/dev/null && "${no_dac[@]}" true 2>/dev/null && ! opens "${no_dac[@]}"; then
	wrap=("${no_dac[@]}")
	how="its mode (without CAP_DAC_OVERRIDE)"
else
	wrap=(env LD_PRELOAD="$shim" KNEMLIKE_SHIM_DEVICE="$denied" KNEMLIKE_SHIM_OPEN=EACCES)
	how="the shim (CAP_DAC_OVERRIDE cannot be dropped here)"
fi
perm_msg="The knemlike single-copy component was requested, but this process may not
open its device.
Device: $denied
Error:  Permission denied
Open MPI will continue without knemlike single copy.
mca_smsc_base_select: no shared-memory single-copy component available for selection"
expect "a device the job may not open, refused by $how; the job runs without single copy" \
	"$perm_msg" --mca smsc knemlike --mca smsc_knemlike_device "$denied" "${verbose[@]}"
wrap=(env LD_PRELOAD="$shim" KNEMLIKE_SHIM_DEVICE="$denied" KNEMLIKE_SHIM_OPEN=EPERM)
expect "EPERM from open is reported as a permission problem too" \
	"The knemlike single-copy component was requested, but this process may not
Error:  Operation not permitted" \
	--mca smsc knemlike --mca smsc_knemlike_device "$denied" "${verbose[@]}"
wrap=()
rm -f "$denied"
exit $status
