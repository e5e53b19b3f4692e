# contrib/env.sh: source it (". contrib/env.sh") after contrib/setup.sh.
# Puts the project's Open MPI (mpirun, mpicc, ompi_info) first on PATH and exports the
# locations the tests and tools use: SMX_TOP, SMX_BUILD, SMX_OMPI_PREFIX, SMX_VM_KERNEL_DIR,
# SMX_CACHE, MPICC; once the project is configured, also what its build/contrib/ompi-env.sh
# says (SMX_MPIRUN, and the component paths a distribution's Open MPI may need).
# SPDX-License-Identifier: BSD-3-Clause

# SMX_BUILD exported by another checkout's env.sh belongs to that checkout's tree.
_smx_top_seen=${SMX_TOP:-}
SMX_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -n "$_smx_top_seen" ] && [ "$_smx_top_seen" != "$SMX_TOP" ]; then
	SMX_BUILD=
fi
unset _smx_top_seen
SMX_BUILD=${SMX_BUILD:-$SMX_TOP/build}
if [ -f "$SMX_BUILD/env.local" ]; then
	. "$SMX_BUILD/env.local"
	if [ -f "$SMX_BUILD/contrib/ompi-env.sh" ]; then # written by configure
		. "$SMX_BUILD/contrib/ompi-env.sh"
	else
		case ":$PATH:" in
		*":$SMX_OMPI_PREFIX/bin:"*) ;;
		*) PATH=$SMX_OMPI_PREFIX/bin:$PATH ;;
		esac
	fi
	# (Debian's own Open MPI: mpicc is the alternatives system's, mpicc.openmpi its own)
	MPICC=$SMX_OMPI_PREFIX/bin/mpicc
	[ ! -x "$MPICC.openmpi" ] || MPICC=$MPICC.openmpi
	export SMX_TOP SMX_BUILD SMX_OMPI_PREFIX SMX_VM_KERNEL_DIR SMX_CACHE MPICC PATH
else
	echo "contrib/env.sh: $SMX_BUILD/env.local not found: run contrib/setup.sh first" >&2
	return 1 2>/dev/null || exit 1
fi
