# configure.m4 for btl/smx in Open MPI's in-tree form (see Makefile.am here).
# SPDX-License-Identifier: BSD-3-Clause

# MCA_opal_btl_smx_CONFIG([action-if-can-compile], [action-if-cannot-compile])
AC_DEFUN([MCA_opal_btl_smx_CONFIG], [
    AC_CONFIG_FILES([opal/mca/btl/smx/Makefile])
    # Linux only: the transport relies on /dev/shm and process-shared atomics.
    AS_CASE([$host_os],
        [linux*], [$1],
        [$2])
])dnl
