#!/usr/bin/env bash
# A job across two hosts: btl/smx takes the peers on the same host and leaves the others
# to btl/tcp. The two "hosts" are network namespaces made here, each with its own
# hostname (a UTS namespace) and an address on one veth pair, in 192.0.2.0/24 (reserved
# for documentation; it exists only inside those namespaces). mpirun starts in the first;
# PRRTE reaches the second through an rsh agent that enters its namespaces. Checks, with
# --mca btl smx,tcp,self and 4 ranks, 2 per host:
#  - Open MPI's own connection table: on-host pairs by smx, off-host pairs by tcp, and
#    btl/smx on each host saw exactly its 2 local processes;
#  - the MPI suite passes, every byte checked;
#  - kill -9 of one host's ranks ends the job with an error and leaves no segment behind,
#    on either host.
# Needs root (namespaces). SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build=${SMX_BUILD:-$SMX_TOP/build}
[ "$(id -u)" = 0 ] || { echo "FAIL: needs root to make network namespaces"; exit 1; }
command -v ip >/dev/null || { echo "FAIL: ip (iproute2) is not installed"; exit 1; }
"$SMX_TOP/tests/mpi/run-suite" --build-only
mkdir -p "$build/tests/smx"
"${MPICC:-mpicc}" -O2 -Wall -Wextra -Werror -o "$build/tests/smx/linger" "$SMX_TOP/tests/smx/linger.c"

ns_a=smx2h-a-$$ ns_b=smx2h-b-$$ addr_a=192.0.2.1 addr_b=192.0.2.2
work=$(mktemp -d)
cleanup() {
	local ns
	for ns in "$ns_a" "$ns_b"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$ns_a"
ip netns add "$ns_b"
ip link add "v$$a" type veth peer name "v$$b"
ip link set "v$$a" netns "$ns_a"
ip link set "v$$b" netns "$ns_b"
ip -n "$ns_a" addr add "$addr_a/24" dev "v$$a"
ip -n "$ns_b" addr add "$addr_b/24" dev "v$$b"
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set "v$$a" up
ip -n "$ns_b" link set "v$$b" up

# The rsh agent: "agent HOST COMMAND..." runs COMMAND on HOST, i.e. in its namespaces.
cat >"$work/agent" <<EOF
#!/bin/sh
host=\$1; shift
case \$host in
$addr_a) ns=$ns_a name=hosta ;;
$addr_b) ns=$ns_b name=hostb ;;
*) echo "agent: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" unshare --uts /bin/sh -c 'hostname "\$1"; shift; eval "\$*"' sh "\$name" "\$@"
EOF
chmod +x "$work/agent"
printf '%s slots=2\n%s slots=2\n' "$addr_a" "$addr_b" >"$work/hosts"
# on_host_a COMMAND...: run COMMAND where mpirun runs, the first host
on_host_a() { "$work/agent" "$addr_a" "$(printf '%q ' "$@")"; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
common=(--hostfile "$work/hosts" --mca plm_rsh_agent "$work/agent" --mca btl smx,tcp,self)

# 1. Who talks through what: Open MPI's table, and btl/smx's own count of local peers.
out=$(on_host_a timeout 120 mpirun -np 4 --bind-to none --oversubscribe "${common[@]}" \
	--mca ompi_display_comm mpi_init --mca btl_base_verbose info "$build/tests/mpi/p2p" 2>&1 |
	tr -d '\000') || true
if grep -q "^p2p: PASS" <<<"$out" && grep -q "on-host: *all connections are smx" <<<"$out" &&
   grep -q "off-host: *all connections are tcp" <<<"$out"; then
	echo "ok: 4 ranks on 2 hosts: on-host pairs by smx, off-host pairs by tcp (Open MPI's table)"
else
	fail "the transports are not smx on-host and tcp off-host: $(tail -n 30 <<<"$out")"
fi
for h in hosta hostb; do
	n=$(grep -c "\[$h:[0-9]*\] btl:smx: 2 local processes" <<<"$out" || true)
	[ "$n" = 2 ] && echo "ok: btl/smx on $h: 2 processes, each with 2 local processes" ||
		fail "btl/smx on $h: $n processes said '2 local processes' (expected 2)"
done

# 2. The MPI suite, every byte checked, across the two hosts.
if on_host_a "$SMX_TOP/tests/mpi/run-suite" --np 4 --quick --hostfile "$work/hosts" \
	--mca plm_rsh_agent "$work/agent" --mca btl smx,tcp,self \
	--label "smx,tcp,self on 2 hosts, np=4"; then
	echo "ok: the MPI suite passes on 2 hosts with smx and tcp"
else
	fail "the MPI suite on 2 hosts"
fi

# 3. kill -9 of the second host's ranks: the job ends with an error, no segment is left.
log=$work/linger.log
on_host_a timeout 120 mpirun -np 4 --bind-to none --oversubscribe "${common[@]}" \
	--mca btl_base_verbose info "$build/tests/smx/linger" >"$log" 2>&1 &
job=$!
for _ in $(seq 1 120); do
	[ "$(grep -c '^READY' "$log")" = 4 ] && break
	sleep 0.5
done
pids_of() { sed -n "s/.*\[$1:0*\([0-9]*\)\] btl:smx: 2 local processes.*/\1/p" "$log"; }
pids_b=$(pids_of hostb | paste -sd' ')
all=$( (pids_of hosta; pids_of hostb) | paste -sd'|')
if [ "$(grep -c '^READY' "$log")" != 4 ] || [ -z "$pids_b" ]; then
	fail "the lingering job did not start on 2 hosts: $(tail -n 20 "$log")"
	kill "$job" 2>/dev/null || true
else
	# shellcheck disable=SC2086
	kill -9 $pids_b
	rc=0
	wait "$job" || rc=$?
	[ $rc != 0 ] && echo "ok: the job ended with an error after kill -9 of hostb's ranks" ||
		fail "mpirun reported success after kill -9 of hostb's ranks"
	sleep 1
	left=$(ls /dev/shm | grep -E "^smx\.[0-9a-f]+\.[0-9]+\.($all)$" || true)
	[ -z "$left" ] && echo "ok: no segment left on either host after kill -9 of one host's ranks" ||
		fail "segments left after kill -9: $left"
fi
exit $status
