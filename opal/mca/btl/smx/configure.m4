# configure.m4 for btl/smx in Open MPI's in-tree form (see Makefile.am here).
# SPDX-License-Identifier: BSD-3-Clause

# MCA_opal_btl_smx_CONFIG([action-if-can-compile], [action-if-cannot-compile])
AC_DEFUN([MCA_opal_btl_smx_CONFIG], [
    # Optional: valgrind's client requests (see the project's SMX_CHECK_MEMCHECK).
    AC_CHECK_HEADER([valgrind/memcheck.h],
        [AC_DEFINE([SMX_HAVE_MEMCHECK_H], [1], [valgrind/memcheck.h is available])])
    AC_CONFIG_FILES([opal/mca/btl/smx/Makefile])
    # Linux only: the transport relies on /dev/shm and process-shared atomics.
    AS_CASE([$host_os],
        [linux*], [$1],
        [$2])
])dnl
