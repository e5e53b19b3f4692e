# configure.m4 for smsc/knemlike in Open MPI's in-tree form (see Makefile.am here).
# SPDX-License-Identifier: BSD-3-Clause

# MCA_opal_smsc_knemlike_CONFIG([action-if-can-compile], [action-if-cannot-compile])
AC_DEFUN([MCA_opal_smsc_knemlike_CONFIG], [
    # Optional: valgrind's client requests (see the project's SMX_CHECK_MEMCHECK).
    AC_CHECK_HEADER([valgrind/memcheck.h],
        [AC_DEFINE([SMX_HAVE_MEMCHECK_H], [1], [valgrind/memcheck.h is available])])
    AC_CONFIG_FILES([opal/mca/smsc/knemlike/Makefile])
    # The uapi header of the knemlike module (kmod/include/uapi of this project).
    AC_ARG_WITH([knemlike-uapi],
        [AS_HELP_STRING([--with-knemlike-uapi=DIR],
            [directory holding linux/knemlike.h (the knemlike module's uapi include dir)])])
    AS_IF([test -n "$with_knemlike_uapi" && test "$with_knemlike_uapi" != yes],
        [smsc_knemlike_CPPFLAGS="-I$with_knemlike_uapi"])
    smsc_knemlike_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $smsc_knemlike_CPPFLAGS"
    # Linux only: the module is a Linux character device with an ioctl interface.
    AS_CASE([$host_os],
        [linux*], [AC_CHECK_HEADER([linux/knemlike.h], [$1], [$2])],
        [$2])
    CPPFLAGS=$smsc_knemlike_save_CPPFLAGS
    AC_SUBST([smsc_knemlike_CPPFLAGS])
])dnl
