# tests/configurations.sh: shell access to tests/configurations. Source it.
# SPDX-License-Identifier: BSD-3-Clause

SMX_CONFIGURATIONS_FILE=$(dirname "${BASH_SOURCE[0]}")/configurations

# Configurations the MPI suite must pass on the host (at 2 and 4 ranks), and in the test
# guest, where the knemlike module is loaded: those that use it, btl/smx and stock btl/sm
# with knemlike, at 2 and 4 ranks. What needs no module (btl/smx with cma or without single
# copy, stock sm with cma or without) runs on the host only: emulation makes each run in
# the guest about eight times slower, and the host runs the same code on the same kind of
# kernel. At 4 ranks the guest runs one configuration of each kind of knemlike use (stock
# sm attaching and mapping, btl/smx attaching, btl/smx by the copy ioctl): the module
# sees more processes at once, not another path, and each run there costs about 40 s.
SMX_MPI_CONFIGS="sm-cma sm-nosc smx-cma smx-nosc smx-single8k smx-single smx-double smx-tight smx-skew-always smx-skew-off smx-nt"
# The fast tier's (tests/check-fast.sh, 2 ranks, quick sizes): btl/smx as it measures,
# without single copy, with both switches pinned (single copy from 8 KiB) and with
# non-temporal stores, and stock btl/sm + cma as the reference.
SMX_FAST_CONFIGS="smx-cma smx-nosc smx-single8k sm-cma smx-nt"
SMX_VM_MPI_CONFIGS_NP2="sm-knemlike smx-knemlike smx-knemlike-single8k smx-knemlike-inplace sm-knemlike-ioctl smx-knemlike-single8k-ioctl sm-knemlike-nomap"
SMX_VM_MPI_CONFIGS_NP4="smx-knemlike-single8k smx-knemlike-single8k-ioctl"
# Of those, the ones whose four data programs are enough (stock sm reaching the module
# another way: the copy ioctl, registrations without exports).
SMX_VM_DATA_ONLY="sm-knemlike-ioctl sm-knemlike-nomap"
# Of those, the ones that must single-copy through knemlike: stock sm single-copies every
# rendezvous, by default through attachments of the sender's registrations (the module's
# attach_faults counter has to move), with smsc_knemlike_attach_max 0 by the copy ioctl
# (its copies counter has to move); smx-knemlike-single8k every one from 8 KiB, through
# mappings of the sender's export (below), by the ioctl with exports off. The default
# smx-knemlike takes each way as it measures it in the guest.
SMX_VM_KNEMLIKE_MUST_ATTACH="sm-knemlike sm-knemlike-nomap"
SMX_VM_KNEMLIKE_MUST_COPY="sm-knemlike-ioctl smx-knemlike-single8k-ioctl"
# Stock sm maps the sender's buffer of each eager message above 256 bytes (CAN_MAP) where
# every process exported its address space: the module's export_faults must move (touches
# of mappings of exports), and must not where exports are off (smsc_knemlike_map false, as
# with a module of ABI 2). btl/smx maps the sender's buffer of each rendezvous it
# single-copies, and with single copy pinned from 4 KiB (smx-knemlike-inplace) of each
# eager message from there too (its data left in place: SMX_KIND_IN_PLACE).
SMX_VM_KNEMLIKE_MUST_MAP="sm-knemlike smx-knemlike-single8k smx-knemlike-inplace"
SMX_VM_KNEMLIKE_MUST_NOT_MAP="sm-knemlike-nomap"

# mpirun arguments of a configuration, by name.
smx_config_args() {
	local args
	args=$(awk -v n="$1" '$1 == n { $1 = ""; sub(/^ +/, ""); print; found = 1 }
		END { exit !found }' "$SMX_CONFIGURATIONS_FILE") ||
		{ echo "tests/configurations.sh: unknown configuration '$1'" >&2; return 1; }
	echo "$args"
}

# What btl/smx's transfers did, from a job's output with btl_base_verbose info (each rank's
# line at finalize): "RANKS SINGLE DOUBLE PUSHES", the lines found and the sums over them
# of the gets by single copy, the gets by double copy and the rendezvous pushed ahead.
smx_transfer_counts() { # smx_transfer_counts OUTPUT
	sed -n 's/.*btl:smx: .*: \([0-9]*\) gets by single copy, \([0-9]*\) by double copy, \([0-9]*\) pushed ahead (.*/\1 \2 \3/p' \
		<<<"$1" | awk '{ n++; s += $1; d += $2; p += $3 } END { print n + 0, s + 0, d + 0, p + 0 }'
}

# A program under valgrind's memcheck, as tests/memcheck-scan judges it: mpirun's
# arguments (the components stay loaded to the end, so that leak stacks name their
# frames; the suite's quick mode), and the valgrind command writing one XML report per
# rank into DIR.
smx_memcheck_mpirun_args() {
	echo "--mca mca_base_component_disable_dlclose 1 -x SMX_TEST_QUICK=1"
}
smx_memcheck_valgrind() { # smx_memcheck_valgrind DIR
	local supp
	supp=$(cd "$(dirname "$SMX_CONFIGURATIONS_FILE")" && pwd)/memcheck.supp
	echo "valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect" \
		"--suppressions=$supp --xml=yes --xml-file=$1/%p.xml"
}
