# configure.m4 for smsc/knemlike in Open MPI's in-tree form (see Makefile.am here).
# SPDX-License-Identifier: BSD-3-Clause

# MCA_opal_smsc_knemlike_CONFIG([action-if-can-compile], [action-if-cannot-compile])
AC_DEFUN([MCA_opal_smsc_knemlike_CONFIG], [
    AC_CONFIG_FILES([opal/mca/smsc/knemlike/Makefile])
    # Linux only: the module is a Linux character device with an ioctl interface.
    AS_CASE([$host_os],
        [linux*], [AC_CHECK_HEADER([sys/ioctl.h], [$1], [$2])],
        [$2])
    AC_SUBST([smsc_knemlike_CPPFLAGS])
])dnl
