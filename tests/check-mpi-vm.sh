#!/usr/bin/env bash
# The MPI data-verification suite inside the QEMU guest (Debian's kernel, TCG), where the
# project's kernel module is loaded: btl/smx and stock btl/sm with knemlike, at 2 and 4
# ranks (tests/configurations.sh; what needs no module runs on the host);
# then the registration cache's hits (MPI_T) and the module's counters once every job is
# gone, knemlike's data under valgrind's memcheck, and a /dev/shm too small for btl/smx's
# segments; then, in a guest on the other kernel series (6.12), the data programs and
# mpi4py's tests on both users of knemlike with Yama's ptrace_scope 0 and 3. Quick mode:
# every category, fewer repeats.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SMX_TOP/tests/configurations.sh"
. "$SMX_TOP/contrib/lib.sh"

# A missing VM kernel is a setup failure, never a skip: CI must run this test.
[ -n "${SMX_VM_KERNEL_DIR:-}" ] && [ -f "$SMX_VM_KERNEL_DIR/kernel.env" ] || {
	echo "FAIL: no VM kernel (SMX_VM_KERNEL_DIR='${SMX_VM_KERNEL_DIR:-}'): run contrib/setup.sh without --no-vm"
	exit 1
}

build=${SMX_BUILD:-$SMX_TOP/build}
. "$SMX_VM_KERNEL_DIR/kernel.env"
[ -f "$build/kmod/$ABI/knemlike.ko" ] || {
	echo "FAIL: knemlike.ko is not built for the guest's kernel $ABI (make in $build)"
	exit 1
}

# Build on the host: compiling under TCG is slow, and the guest sees the same tree.
"$SMX_TOP/tests/mpi/run-suite" --build-only
mkdir -p "$build/tests/smx"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/truncate" "$SMX_TOP/tests/smx/truncate.c"
mkdir -p "$build/tests/smsc"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smsc/cache_hits" \
	"$SMX_TOP/tests/smsc/cache_hits.c"

suite="$SMX_TOP/tests/mpi/run-suite --quick"
script=""
# Around a run that must use the module, one of its counters must move in between: copies
# (the ioctl), attach_faults (touches of attachments: a mapped registration, a copy is then
# a memcpy), export_faults (touches of mappings of a peer's export), or any (the sum: 'used').
counter() { # counter NAME: shell text that reads it in the guest
	case $1 in
	used) echo '$(($(cat /sys/class/misc/knemlike/stats/copies) + $(cat /sys/class/misc/knemlike/stats/attach_faults) + $(cat /sys/class/misc/knemlike/stats/export_faults)))' ;;
	*) echo "\$(cat /sys/class/misc/knemlike/stats/$1)" ;;
	esac
}
copies_before() { script+="before=$(counter "${1:-used}"); "; }
copies_after() { # copies_after LABEL [COUNTER]
	local name=${2:-used}
	script+="n=\$(($(counter "$name") - before)); "
	script+="if [ \$n -gt 0 ]; then echo \"ok: $1 used knemlike: $name +\$n\"; "
	script+="else echo 'FAIL: $1 never used knemlike ($name did not move)'; status=1; fi; "
}
# Mappings of exports (CAN_MAP): export_faults must move where they are on, and stay where
# they are off.
maps_before() { script+="mbefore=$(counter export_faults); "; }
maps_after() { # maps_after LABEL yes|no
	script+="n=\$(($(counter export_faults) - mbefore)); "
	if [ "$2" = yes ]; then
		script+="if [ \$n -gt 0 ]; then echo \"ok: $1 mapped the senders' buffers: export_faults +\$n\"; "
		script+="else echo 'FAIL: $1 never mapped a buffer of a sender (export_faults did not move)'; status=1; fi; "
	else
		script+="if [ \$n -eq 0 ]; then echo 'ok: $1 mapped nothing (export_faults did not move)'; "
		script+="else echo \"FAIL: $1 mapped with exports off: export_faults +\$n\"; status=1; fi; "
	fi
}
# The suite's four data programs: for the configurations that only vary how stock sm
# reaches the module (tests/configurations.sh, SMX_VM_DATA_ONLY: CI's time), and in the
# 6.12 guest where what is tested is the kernel or ptrace_scope, not the data paths.
data_only="--only p2p --only datatypes --only anysource --only unexpected"
for run in $(printf '2:%s ' $SMX_VM_MPI_CONFIGS_NP2) $(printf '4:%s ' $SMX_VM_MPI_CONFIGS_NP4); do
	np=${run%%:*}
	cfg=${run#*:}
	must=
	map=
	case " $SMX_VM_KNEMLIKE_MUST_COPY " in *" $cfg "*) must=copies ;; esac
	case " $SMX_VM_KNEMLIKE_MUST_ATTACH " in *" $cfg "*) must=attach_faults ;; esac
	case " $SMX_VM_KNEMLIKE_MUST_MAP " in *" $cfg "*) map=yes ;; esac
	case " $SMX_VM_KNEMLIKE_MUST_NOT_MAP " in *" $cfg "*) map=no ;; esac
	if [ -n "$must" ]; then copies_before "$must"; fi
	if [ -n "$map" ]; then maps_before; fi
	only=
	case " $SMX_VM_DATA_ONLY " in *" $cfg "*) only=$data_only ;; esac
	script+="$suite $only --np $np --label '$cfg np=$np (VM)' $(smx_config_args "$cfg") || status=1; "
	if [ -n "$must" ]; then copies_after "$cfg np=$np" "$must"; fi
	if [ -n "$map" ]; then maps_after "$cfg np=$np" "$map"; fi
done
script+="echo '== registration cache (sm + knemlike, copies by ioctl)'; "
# Registrations hold their pages (smsc_knemlike_hold_pages): 24 sends of one 1 MiB buffer
# (4 of them after new pages were mapped at its address) take the buffer's pages a few
# times (held_takes) and pin none at copy time (pages_pinned moves by less than one send's
# 256 pages; without holding it would move by 24 x 256).
script+="st=/sys/class/misc/knemlike/stats; p0=\$(cat \$st/pages_pinned); t0=\$(cat \$st/held_takes); "
script+="timeout 300 mpirun --allow-run-as-root -np 2 $(smx_config_args sm-knemlike-ioctl) "
script+="$build/tests/smsc/cache_hits || status=1; "
script+="dp=\$((\$(cat \$st/pages_pinned) - p0)); dt=\$((\$(cat \$st/held_takes) - t0)); "
script+="if [ \$dt -ge 1 ] && [ \$dp -lt 256 ]; then "
script+="echo \"ok: held registrations: \$dt takes, \$dp pages pinned by copies\"; "
script+="else echo \"FAIL: held registrations: \$dt takes, \$dp pages pinned by copies\"; status=1; fi; "
# The same through attachments (the default): the receiver copies through one mapping of
# the sender's registration, also after the sender's pages were replaced (every byte
# checked); and 8 KiB sends, which sm sends in place under CAN_MAP, read through one
# mapping of the sender's export, also after its pages were replaced.
script+="echo '== attachments and mappings of exports (sm + knemlike)'; "
script+="timeout 300 mpirun --allow-run-as-root -np 2 $(smx_config_args sm-knemlike) "
script+="$build/tests/smsc/cache_hits --expect-attach --expect-map || status=1; "
# Every region went with its job: nothing may be left registered.
script+="live=\$(cat /sys/class/misc/knemlike/stats/regions_live); "
script+="echo \"knemlike: \$(cat /sys/class/misc/knemlike/stats/copies) copies, \$live regions left\"; "
script+="[ \"\$live\" = 0 ] || { echo 'FAIL: regions left registered after the jobs ended'; status=1; }; "
script+="att=\$(cat /sys/class/misc/knemlike/stats/attachments); "
script+="echo \"knemlike: \$(cat /sys/class/misc/knemlike/stats/attach_faults) attachment faults, \$att attachments left\"; "
script+="[ \"\$att\" = 0 ] || { echo 'FAIL: attachments left after the jobs ended'; status=1; }; "
# Every process's export went with it (EXPORT_DESTROY at finalize, or close at exit).
script+="ex=\$(cat /sys/class/misc/knemlike/stats/exports_live); "
script+="echo \"knemlike: \$(cat /sys/class/misc/knemlike/stats/export_faults) export faults, \$(cat /sys/class/misc/knemlike/stats/export_pages_mapped) pages mapped, \$ex exports left\"; "
script+="[ \"\$ex\" = 0 ] || { echo 'FAIL: exports left after the jobs ended'; status=1; }; "
# Eager messages in place (the receiver copies through its mapping of the sender's buffer):
# with single copy pinned from 4 KiB, p2p's eager messages from there must come so, every
# byte checked, and each rank must say it received some.
script+="echo '== eager messages in place (smx + knemlike from 4 KiB)'; "
script+="out=\$(timeout 300 mpirun --allow-run-as-root -np 2 $(smx_config_args smx-knemlike-inplace) "
script+="--mca btl_base_verbose info $build/tests/mpi/p2p 2>&1); "
script+="n=\$(grep -o '[0-9]* eager messages received in place' <<<\"\$out\" | awk '\$1 > 0' | wc -l); "
script+="if grep -q '^p2p: PASS' <<<\"\$out\" && [ \"\$n\" = 2 ]; then "
script+="echo \"ok: p2p passes with eager messages in place: \$(grep -o '[0-9]* eager messages received in place' <<<\"\$out\" | tr '\\n' ' ')\"; "
script+="else echo \"FAIL: eager messages in place (p2p passed? ranks that received some: \$n of 2)\"; status=1; fi; "
# ob1 5.0.x raises no MPI_ERR_TRUNCATE for a receive posted before a larger message in
# place (as under stock sm with CAN_MAP): with btl_smx_in_place off, where the pinned
# configuration would send it in place, the error must be raised, posted or unexpected.
script+="out=\$(timeout 300 mpirun --allow-run-as-root -np 2 $(smx_config_args smx-knemlike-inplace) "
script+="--mca btl_smx_pair_ring_after 0 --mca btl_smx_in_place off $build/tests/smx/truncate 20000 10000 2>&1); "
script+="if grep -q '^truncate: PASS' <<<\"\$out\"; then echo 'ok: btl_smx_in_place off: a truncated receive fails with MPI_ERR_TRUNCATE'; "
script+="else echo \"FAIL: btl_smx_in_place off: \$out\"; status=1; fi; "
# Under valgrind's memcheck, data the module copied into a rank must read as initialised
# there (smsc/knemlike tells memcheck what the kernel wrote): collectives receives into
# buffers it never wrote, then checks them. On btl/smx single-copying through mappings of
# exports, the path stock sm's eager messages take too (one run: CI's time); the reports
# are judged on the host afterwards (tests/memcheck-scan, as on the host in
# check-memcheck-host.sh).
memcheck_dir=$build/memcheck-vm
rm -rf "$memcheck_dir"
for cfg in smx-knemlike-single8k; do
	mkdir -p "$memcheck_dir/$cfg"
	script+="echo '== memcheck: collectives on $cfg'; "
	copies_before
	script+="timeout 600 mpirun --allow-run-as-root -np 2 --bind-to none $(smx_config_args "$cfg") "
	script+="$(smx_memcheck_mpirun_args) $(smx_memcheck_valgrind "$memcheck_dir/$cfg") "
	script+="$build/tests/mpi/collectives || status=1; "
	copies_after "$cfg under memcheck"
done
# Last, as it shrinks the guest's /dev/shm. With 16 MiB the 2 processes' default budgets
# (8 MiB each, segments of 8.5 MiB) do not fit twice: btl/smx halves them until both fit
# (4 MiB), and says nothing. A budget asked for stays: 16 MiB fits once in 24 MiB, not
# twice: the process that comes second cannot reserve its message area and refuses
# btl/smx at MPI_Init, by name (or opal_shmem does, finding too little space left) (before 2026-11-27 both ran with a warning, and the job
# could die of SIGBUS once the area filled); in 12 MiB not even once: refused by name.
shm_case() { # shm_case SIZE WANT_TEXT UNWANTED_TEXT WANT_PASS(yes/no) WHAT MPIRUN-ARGS
	script+="echo '== /dev/shm of $1: $5'; "
	script+="if ! mount -o remount,size=$1 /dev/shm; then echo 'FAIL: remount /dev/shm'; status=1; "
	script+="else out=\$(timeout 300 mpirun --allow-run-as-root -np 2 --mca btl smx,self $6 "
	script+="$build/tests/mpi/anysource 2>&1 | tr -d '\\000'); "
	script+="if grep -q '$2' <<<\"\$out\" && ! grep -q '$3' <<<\"\$out\" && "
	script+="[ \"\$(grep -c '^anysource: PASS' <<<\"\$out\")\" = "
	script+="$([ "$4" = yes ] && echo 1 || echo 0) ]; then echo 'ok: $5'; "
	script+="else echo \"FAIL: $5: \$out\"; status=1; fi; fi; "
}
shm_case 16m "a budget of 4096 KiB" "not for those of every process" yes \
	"the default budgets shrink to fit both segments, no warning" "--mca btl_base_verbose info"
shm_case 24m 'could not reserve\|not enough space for' "a budget of 4096 KiB" no \
	"budgets of 16 MiB asked for: room for one segment only, the second refused by name" \
	"--mca btl_smx_budget_kb 16384 --mca btl_base_verbose info"
shm_case 12m "more shared memory than /dev/shm" "a budget of" no \
	"budgets of 16 MiB asked for: no room for one segment, smx refused by name" \
	"--mca btl_smx_budget_kb 16384"
# The second kernel series (bookworm-backports' 6.12), in a guest of its own: on both
# users of knemlike, first as booted (ptrace_scope 0) the suite's four data programs
# (point-to-point, datatypes, MPI_ANY_SOURCE, unexpected messages), then with Yama's
# ptrace_scope 3 the whole suite, as below; and mpi4py's tests under 3. The module for
# it is built here (check-kmod-vm.sh, later, builds it too).
run_612() {
	local env
	env=$("$SMX_TOP/tests/vm/prepare-kernel" --series bookworm-backports --print-env) || {
		echo "FAIL: cannot prepare the bookworm-backports kernel"
		return 1
	}
	(
		eval "$env"
		out=$build/kmod/$ABI
		if ! make -s -C "$SMX_TOP/kmod" KDIR="$KBUILD" OUT="$out" >"$build/kmod-$ABI.log" 2>&1 ||
			grep -q 'warning:' "$build/kmod-$ABI.log"; then
			cat "$build/kmod-$ABI.log"
			echo "FAIL: the module does not build cleanly against $ABI"
			exit 1
		fi
		cd "$SMX_TOP"
		"$SMX_TOP/tests/vm/run-in-vm" --series bookworm-backports --module "$out/knemlike.ko" \
			--dmesg "$build/vm-6.12.dmesg" bash -c "status=0; $1 exit \$status"
	)
}
# The 6.1 guest runs what is written so far; what follows goes to the 6.12 guest.
script61=$script
script="echo 0 >/proc/sys/kernel/yama/ptrace_scope; "
script+="echo \"== kernel \$(uname -r), ptrace_scope \$(cat /proc/sys/kernel/yama/ptrace_scope)\"; "
data_612() { # data_612 WHEN [ONLY]: the suite (or its programs ONLY) on both users of
	# knemlike, each seen to use it
	local cfg faults
	for cfg in sm-knemlike smx-knemlike-single8k; do
		faults=attach_faults
		[ "$cfg" = sm-knemlike ] || faults=export_faults # (smx maps what it single-copies)
		copies_before $faults
		script+="$suite ${2:-} --np 2 --label '$cfg np=2 $1 (VM, 6.12)' $(smx_config_args "$cfg") || status=1; "
		copies_after "$cfg np=2 $1 on 6.12" $faults
	done
}
data_612 ptrace_scope=0 "$data_only"
# mpi4py's own tests (a client we did not write) on both users of knemlike under
# ptrace_scope 3 (as booted, only the reference: CI's time), each seen to move data
# through the module (sm maps its senders' buffers: export_faults; smx, single-copying
# from 256 B, maps them too), test by test against stock sm without single copy in the
# same guest.
# Its modules that move data between the ranks (point-to-point, collectives, pickled
# objects, one-sided, empty messages): the whole suite takes 2 min a run in TCG, and runs
# on the host (tests/check-mpi4py.sh). The records are compared once the guest is gone.
problem=$(smx_mpi4py_problem "$SMX_OMPI_PREFIX")
[ -z "$problem" ] || { echo "FAIL: $problem"; exit 1; }
mpi4py_records=$build/mpi4py-vm
rm -rf "$mpi4py_records"
mkdir -p "$mpi4py_records"
mpi4py_vm_tests=""
for m in p2p_buf p2p_obj cco_buf util_pkl5 rma msgzero; do
	mpi4py_vm_tests+=" -i '^test_$m[.]py\$'"
done
mpi4py_612() { # mpi4py_612 WHEN CFG [COUNTER]: a record in $mpi4py_records/WHEN-CFG
	local out=$mpi4py_records/$1-$2
	mkdir -p "$out"
	[ -n "${3:-}" ] && copies_before "$3"
	script+="echo '== mpi4py ($1): $2'; "
	script+="timeout -k 10 600 mpirun --allow-run-as-root -np 2 --bind-to none $(smx_config_args "$2") "
	script+="$(smx_mpi4py_record_cmd "$out" "$mpi4py_vm_tests") "
	script+=">$out.log 2>&1 || { echo 'FAIL: mpi4py on $2 ($1) exited non-zero'; tail -20 $out.log; status=1; }; "
	[ -n "${3:-}" ] && copies_after "mpi4py on $2 ($1, 6.12)" "$3"
	return 0
}
mpi4py_knemlike() { # mpi4py_knemlike WHEN
	mpi4py_612 "$1" sm-knemlike export_faults
	mpi4py_612 "$1" smx-knemlike-small export_faults
}
mpi4py_612 ptrace_scope=0 sm-nosc

# Last of all, as it cannot be undone before the guest reboots: Yama's ptrace_scope 3 (as
# Rocky 9.8's fix for CVE-2026-46333 sets it): no process may read another's memory, not
# even root's. knemlike needs no ptrace right: stock sm and smx with knemlike must still
# single-copy through it. smx with cma selected must say once (per job) that it cannot,
# copy through shared memory and never make the kernel log an attempt. Stock sm + cma,
# the failure mode docs/using-knemlike.md describes: its smsc still offers itself, every
# process fails to reach its peers by CMA (the kernel logs the attempts, rate-limited),
# and p2p still passes by copying twice. The users of knemlike run the whole suite there;
# for smx with cma the four data programs are enough (what ptrace_scope 3 may break is
# reaching the peer; its data paths are those of the host's runs).
script+="echo '== kernel.yama.ptrace_scope 3'; mount -o remount,size=256m /dev/shm; "
script+="klog() { dmesg | grep -c 'ptrace attach\\|ptrace read\\|ptrace.*was attempted'; }; "
script+="if ! echo 3 2>/dev/null >/proc/sys/kernel/yama/ptrace_scope || "
script+="[ \"\$(cat /proc/sys/kernel/yama/ptrace_scope)\" != 3 ]; then "
script+="echo 'FAIL: cannot set kernel.yama.ptrace_scope to 3 (a kernel without Yama?)'; status=1; else "
data_612 ptrace_scope=3
mpi4py_knemlike ptrace_scope=3
script+="k0=\$(klog); $suite $data_only --np 2 --label 'smx-cma np=2 ptrace_scope=3 (VM, 6.12)' $(smx_config_args smx-cma) || status=1; "
script+="out=\$(timeout 300 mpirun --allow-run-as-root -np 2 $(smx_config_args smx-cma) $build/tests/mpi/p2p 2>&1); "
script+="rc=\$?; k1=\$(klog); said=\$(grep -ac 'lets no process read' <<<\"\$out\"); "
script+="if [ \$rc = 0 ] && [ \"\$said\" = 1 ] && [ \$k1 = \$k0 ]; then "
script+="echo \"ok: smx with cma under ptrace_scope 3: the suite passes by double copy, said once, no kernel log line\"; "
script+="else echo \"FAIL: smx with cma under ptrace_scope 3: p2p status \$rc, said \$said times (want 1), kernel log lines \$k0 -> \$k1 (want no new): \$(tail -30 <<<\"\$out\")\"; status=1; fi; "
# (stock's whole suite is not run: its rma test hung there, 2026-11-27, osc over sm + cma)
script+="k0=\$(klog); if timeout 300 mpirun --allow-run-as-root -np 2 $(smx_config_args sm-cma) $build/tests/mpi/p2p >/dev/null 2>&1; "
script+="then k1=\$(klog); if [ \$k1 -gt \$k0 ]; then echo \"ok: stock sm + cma under ptrace_scope 3: p2p passes without single copy, the kernel logged \$((k1 - k0)) refused attempts\"; "
script+="else echo 'FAIL: stock sm + cma under ptrace_scope 3: no refused attempt logged (smsc/cma no longer tries? update docs/using-knemlike.md)'; status=1; fi; "
script+="else echo 'FAIL: stock sm + cma under ptrace_scope 3: p2p failed'; status=1; fi; "
script+="fi; "
cd "$SMX_TOP"
"$SMX_TOP/tests/vm/run-in-vm" bash -c "status=0; $script61 exit \$status" || status=1
run_612 "$script" || status=1
echo "== mpi4py's tests in the 6.12 guest, against stock sm without single copy there"
for rec in "$mpi4py_records"/ptrace_scope=*-sm-knemlike "$mpi4py_records"/ptrace_scope=*-smx-knemlike-small; do
	python3 "$SMX_TOP/tests/mpi4py/compare.py" sm-nosc "$mpi4py_records/ptrace_scope=0-sm-nosc" \
		"$(basename "$rec")" "$rec" || status=1
done
for cfg in smx-knemlike-single8k; do
	echo "== memcheck reports of $cfg (VM)"
	"$SMX_TOP/tests/memcheck-scan" --reports 2 "$memcheck_dir/$cfg" | tail -n 60 || status=1
done
exit $status
