# configure.m4: the project's autoconf macros.
#   SMX_CHECK_OMPI          an installed Open MPI >= 5.0 with its devel headers
#   SMX_CHECK_HWLOC         hwloc (locality classification, its unit tests)
#   SMX_CHECK_GTEST         GoogleTest (make check)
#   SMX_CHECK_KERNEL_BUILD  a kernel build tree for kmod/
#   SMX_CHECK_MEMCHECK      valgrind's client requests (optional)
# SPDX-License-Identifier: BSD-3-Clause

dnl SMX_CHECK_OMPI: --with-ompi=DIR (default: the ompi_info found on PATH). DIR is the
dnl prefix whose bin/ holds ompi_info: an installation of its own (headers under
dnl DIR/include/openmpi), or a distribution's, /usr (Debian's libopenmpi-dev: headers and
dnl libraries under /usr/lib/<triplet>/openmpi); where the headers, libraries and
dnl components are is asked of that ompi_info (--path). Sets SMX_OMPI_PREFIX,
dnl SMX_OMPI_VERSION, OMPI_CPPFLAGS, OMPI_LDFLAGS, OMPI_PAL_LIBS, MPICC, MPIRUN,
dnl SMX_COMPONENT_DIR (--with-component-dir), SMX_OMPI_HELP_DIR, SMX_OMPI_COMPONENT_PATH,
dnl SMX_PMIX_COMPONENT_PATH; writes contrib/ompi-env.sh and ompi-bin/ in the build tree.
AC_DEFUN([SMX_CHECK_OMPI], [
    AC_ARG_WITH([ompi],
        [AS_HELP_STRING([--with-ompi=DIR],
            [Open MPI >= 5.0 with its devel headers, DIR the prefix of its bin/ompi_info: built with --with-devel-headers, or a distribution's (/usr with Debian's libopenmpi-dev) (default: from ompi_info on PATH)])])
    AC_ARG_WITH([ompi-missing-headers],
        [AS_HELP_STRING([--with-ompi-missing-headers=DIR],
            [a directory holding opal/mca/threads/pthreads/threads_pthreads*.h from the source of the same Open MPI version, for an installation that lacks them (--with-devel-headers forgets them; so does Debian's libopenmpi-dev)])])
    AC_ARG_ENABLE([ompi-rpath],
        [AS_HELP_STRING([--disable-ompi-rpath],
            [do not record the Open MPI's libdir as the components' run path (a package: the libopen-pal that loads them is there already; default: recorded unless the Open MPI is /usr's)])])
    AC_ARG_WITH([component-dir],
        [AS_HELP_STRING([--with-component-dir=DIR],
            [where to install mca_*.so (default: the Open MPI's own component directory, ompi_info --path pkglibdir)])])

    AS_IF([test -z "$with_ompi" || test "$with_ompi" = yes], [
        AC_PATH_PROG([SMX_OMPI_INFO], [ompi_info])
        AS_IF([test -z "$SMX_OMPI_INFO"],
            [AC_MSG_ERROR([no Open MPI found: pass --with-ompi=DIR (an Open MPI >= 5.0 with its devel headers), or run contrib/setup.sh])])
        with_ompi=`dirname "$SMX_OMPI_INFO"`
        with_ompi=`dirname "$with_ompi"`
    ], [test "$with_ompi" = no], [
        AC_MSG_ERROR([this project is a set of Open MPI plugins; it cannot be built --without-ompi])
    ])
    SMX_OMPI_PREFIX=`cd "$with_ompi" 2>/dev/null && pwd`
    AS_IF([test -z "$SMX_OMPI_PREFIX" || test ! -x "$SMX_OMPI_PREFIX/bin/ompi_info"],
        [AC_MSG_ERROR([--with-ompi=$with_ompi: no Open MPI there (no bin/ompi_info)])])

    AC_MSG_CHECKING([Open MPI version])
    SMX_OMPI_VERSION=`"$SMX_OMPI_PREFIX/bin/ompi_info" -V 2>/dev/null | sed -n 's/^Open MPI v\(@<:@0-9.@:>@*\).*/\1/p'`
    AC_MSG_RESULT([${SMX_OMPI_VERSION:-unknown}])
    smx_ompi_major=`echo "$SMX_OMPI_VERSION" | cut -d. -f1`
    AS_IF([test -z "$smx_ompi_major" || test "$smx_ompi_major" -lt 5],
        [AC_MSG_ERROR([Open MPI at $SMX_OMPI_PREFIX is ${SMX_OMPI_VERSION:-of unknown version}; need >= 5.0 (the smsc framework)])])

    # Its own directories, as it was configured (a distribution moves them all).
    for smx_dir in libdir incdir pkgincludedir pkglibdir pkgdatadir; do
        AC_MSG_CHECKING([Open MPI's $smx_dir])
        smx_val=`"$SMX_OMPI_PREFIX/bin/ompi_info" --path $smx_dir --parsable 2>/dev/null | sed -n "s/^path:$smx_dir://p"`
        AS_IF([test -z "$smx_val" || test ! -d "$smx_val"],
            [AC_MSG_RESULT([no])
             AC_MSG_ERROR([$SMX_OMPI_PREFIX/bin/ompi_info --path $smx_dir gives no directory ('$smx_val')])])
        AC_MSG_RESULT([$smx_val])
        eval "smx_ompi_$smx_dir=\$smx_val"
    done

    # Debian names Open MPI's wrappers mpicc.openmpi and mpirun.openmpi; plain mpicc and
    # mpirun there are the alternatives system's, and may be MPICH's.
    AS_IF([test -x "$SMX_OMPI_PREFIX/bin/mpicc.openmpi"],
        [MPICC="$SMX_OMPI_PREFIX/bin/mpicc.openmpi"],
        [MPICC="$SMX_OMPI_PREFIX/bin/mpicc"])
    AS_IF([test -x "$SMX_OMPI_PREFIX/bin/mpirun.openmpi"],
        [MPIRUN="$SMX_OMPI_PREFIX/bin/mpirun.openmpi"],
        [MPIRUN="$SMX_OMPI_PREFIX/bin/mpirun"])
    "$MPICC" --showme:version 2>/dev/null | grep "Open MPI" >/dev/null ||
        AC_MSG_ERROR([$MPICC is not Open MPI's compiler wrapper])

    OMPI_CPPFLAGS="-I$smx_ompi_pkgincludedir -I$smx_ompi_incdir"
    # An Open MPI built against an external PMIx (Debian's) includes its pmix.h from
    # opal's headers; where that PMIx keeps it, its pkg-config file says
    # (/usr/lib/<triplet>/pmix2/include on Debian).
    AS_IF([grep '^#define OPAL_USING_INTERNAL_PMIX 0' "$smx_ompi_pkgincludedir/opal_config.h" >/dev/null 2>&1], [
        AC_MSG_CHECKING([for the external PMIx's headers])
        smx_pmix_cflags=`pkg-config --cflags pmix 2>/dev/null`
        AS_IF([test -z "$smx_pmix_cflags"],
            [AC_MSG_RESULT([no])
             AC_MSG_ERROR([Open MPI at $SMX_OMPI_PREFIX was built against an external PMIx, whose headers pkg-config does not find (Debian: apt-get install libpmix-dev)])])
        AC_MSG_RESULT([$smx_pmix_cflags])
        OMPI_CPPFLAGS="$OMPI_CPPFLAGS $smx_pmix_cflags"
    ])
    AS_IF([test -n "$with_ompi_missing_headers" && test "$with_ompi_missing_headers" != no], [
        AS_IF([test -f "$with_ompi_missing_headers/opal/mca/threads/pthreads/threads_pthreads.h"],
            [OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I`cd "$with_ompi_missing_headers" && pwd`"],
            [AC_MSG_ERROR([--with-ompi-missing-headers=$with_ompi_missing_headers: no opal/mca/threads/pthreads/threads_pthreads.h there])])
    ])
    # A distribution's libraries are the loader's business (and a package must not carry
    # an rpath: --disable-ompi-rpath, for one of /usr/lib64/openmpi); an installation of
    # its own is found through the rpath.
    AS_IF([test "$SMX_OMPI_PREFIX" = /usr || test "$enable_ompi_rpath" = no],
        [OMPI_LDFLAGS="-L$smx_ompi_libdir"],
        [OMPI_LDFLAGS="-L$smx_ompi_libdir -Wl,-rpath,$smx_ompi_libdir"])
    OMPI_PAL_LIBS="-lopen-pal"
    # (libtool, given -lopen-pal, finds an Open MPI's libopen-pal.la and records its
    # libdir as the run path all the same: said to the linker alone, it is not)
    AS_IF([test "$enable_ompi_rpath" = no], [OMPI_PAL_LIBS="-Wl,-lopen-pal"])

    smx_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
    AC_MSG_CHECKING([for Open MPI devel headers (btl.h, smsc.h, rcache.h)])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include "opal_config.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/smsc/smsc.h"
#include "opal/mca/smsc/base/base.h"
#include "opal/mca/rcache/rcache.h"
#include "opal/mca/hwloc/base/base.h"
#if OPAL_MAJOR_VERSION < 5
#error too old
#endif
]], [[return 0;]])],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])
         AS_IF([test ! -f "$smx_ompi_pkgincludedir/opal_config.h"],
             [AC_MSG_ERROR([Open MPI at $SMX_OMPI_PREFIX has no devel headers (no opal_config.h in $smx_ompi_pkgincludedir): rebuild it with --with-devel-headers, or install the distribution's (Debian: libopenmpi-dev)])],
             [test ! -f "$smx_ompi_pkgincludedir/opal/mca/threads/pthreads/threads_pthreads.h" && test -z "$with_ompi_missing_headers"],
             [AC_MSG_ERROR([Open MPI at $SMX_OMPI_PREFIX lacks opal/mca/threads/pthreads/threads_pthreads*.h, which opal_config.h includes: copy them from the source of Open MPI $SMX_OMPI_VERSION into $smx_ompi_pkgincludedir, or pass --with-ompi-missing-headers=DIR (contrib/setup.sh does this for you); see config.log])],
             [AC_MSG_ERROR([Open MPI at $SMX_OMPI_PREFIX: its devel headers do not compile here (see config.log)])])])
    CPPFLAGS=$smx_save_CPPFLAGS

    smx_save_LDFLAGS=$LDFLAGS
    LDFLAGS="$LDFLAGS $OMPI_LDFLAGS"
    AC_CHECK_LIB([open-pal], [opal_output_open], [],
        [AC_MSG_ERROR([cannot link against libopen-pal in $smx_ompi_libdir])])
    LDFLAGS=$smx_save_LDFLAGS
    LIBS=`echo "$LIBS" | sed 's/-lopen-pal//'`

    AS_IF([test -n "$with_component_dir" && test "$with_component_dir" != yes],
        [SMX_COMPONENT_DIR=$with_component_dir],
        [SMX_COMPONENT_DIR=$smx_ompi_pkglibdir])
    SMX_OMPI_HELP_DIR=$smx_ompi_pkgdatadir

    # How to run this Open MPI, for the tests and contrib/env.sh (contrib/ompi-env.sh, and
    # ompi-bin/ with its mpicc, mpirun, mpiexec and ompi_info: Debian's plain mpicc and
    # mpirun are the alternatives system's, and may be MPICH's). An Open MPI with an
    # external PMIx (Debian's) needs both component paths said: its prterun hands every
    # process its PMIx's component directory as mca_base_component_path (both projects
    # name the parameter so), and then a component outside libmpi is not found.
    SMX_OMPI_COMPONENT_PATH=
    SMX_PMIX_COMPONENT_PATH=
    AS_IF([test -n "$smx_pmix_cflags"], [
        smx_val=`pkg-config --variable=libdir pmix 2>/dev/null`
        AS_IF([test -n "$smx_val" && test -d "$smx_val/pmix"],
            [SMX_PMIX_COMPONENT_PATH=$smx_val/pmix],
            [AC_MSG_WARN([the external PMIx's component directory is not $smx_val/pmix: mpirun may not find btl/smx (see docs/install.md on Debian's Open MPI)])])
        SMX_OMPI_COMPONENT_PATH=$smx_ompi_pkglibdir
        AS_IF([test "$SMX_COMPONENT_DIR" != "$smx_ompi_pkglibdir"],
            [SMX_OMPI_COMPONENT_PATH="$SMX_OMPI_COMPONENT_PATH:$SMX_COMPONENT_DIR"])
    ])
    AC_CONFIG_FILES([contrib/ompi-env.sh])
    AC_CONFIG_COMMANDS([ompi-bin], [
        rm -rf ompi-bin && mkdir ompi-bin &&
        ln -s "$smx_cfg_mpicc" ompi-bin/mpicc && ln -s "$smx_cfg_mpirun" ompi-bin/mpirun &&
        ln -s "$smx_cfg_mpirun" ompi-bin/mpiexec &&
        ln -s "$smx_cfg_prefix/bin/ompi_info" ompi-bin/ompi_info ||
            AC_MSG_ERROR([could not make ompi-bin/])
    ], [smx_cfg_mpicc='$MPICC' smx_cfg_mpirun='$MPIRUN' smx_cfg_prefix='$SMX_OMPI_PREFIX'])
    MPI_CFLAGS=`"$MPICC" --showme:compile`
    MPI_LIBS=`"$MPICC" --showme:link`

    AC_SUBST([SMX_OMPI_PREFIX])
    AC_SUBST([SMX_OMPI_VERSION])
    AC_SUBST([SMX_COMPONENT_DIR])
    AC_SUBST([SMX_OMPI_HELP_DIR])
    AC_SUBST([SMX_OMPI_COMPONENT_PATH])
    AC_SUBST([SMX_PMIX_COMPONENT_PATH])
    AC_SUBST([OMPI_CPPFLAGS])
    AC_SUBST([OMPI_LDFLAGS])
    AC_SUBST([OMPI_PAL_LIBS])
    AC_SUBST([MPICC])
    AC_SUBST([MPIRUN])
    AC_SUBST([MPI_CFLAGS])
    AC_SUBST([MPI_LIBS])
])

dnl SMX_CHECK_HWLOC: hwloc >= 2 (the same one Open MPI uses when built --with-hwloc=external).
AC_DEFUN([SMX_CHECK_HWLOC], [
    PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [],
        [AC_MSG_ERROR([hwloc >= 2.0 not found (Debian: apt-get install libhwloc-dev)])])
])

dnl SMX_CHECK_GTEST: GoogleTest for the unit tests run by make check.
AC_DEFUN([SMX_CHECK_GTEST], [
    AC_LANG_PUSH([C++])
    smx_save_LIBS=$LIBS
    LIBS="$LIBS -lgtest -pthread"
    AC_MSG_CHECKING([for GoogleTest])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <gtest/gtest.h>]],
                                    [[testing::InitGoogleTest(); return 0;]])],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])
         AC_MSG_ERROR([GoogleTest not found (Debian: apt-get install libgtest-dev)])])
    LIBS=$smx_save_LIBS
    AC_LANG_POP([C++])
    GTEST_LIBS="-lgtest -lgtest_main -pthread"
    AC_SUBST([GTEST_LIBS])
])

dnl SMX_CHECK_KERNEL_BUILD: the kernel build tree kmod/ is built against.
dnl --with-kernel-build=DIR, else the running kernel's build tree, else the VM kernel's
dnl headers (--with-vm-kernel=DIR: the cache directory tests/vm/prepare-kernel made).
AC_DEFUN([SMX_CHECK_KERNEL_BUILD], [
    AC_ARG_WITH([kernel-build],
        [AS_HELP_STRING([--with-kernel-build=DIR],
            [kernel build tree for kmod/ (default: /lib/modules/`uname -r`/build, else the VM kernel's)])])
    AC_ARG_WITH([vm-kernel],
        [AS_HELP_STRING([--with-vm-kernel=DIR],
            [the test VM's kernel (a directory holding kernel.env, made by tests/vm/prepare-kernel)])])
    SMX_KBUILD=
    SMX_VM_KERNEL_DIR=
    AS_IF([test -n "$with_vm_kernel" && test "$with_vm_kernel" != no], [
        AS_IF([test -f "$with_vm_kernel/kernel.env"],
            [SMX_VM_KERNEL_DIR=$with_vm_kernel],
            [AC_MSG_ERROR([--with-vm-kernel=$with_vm_kernel: no kernel.env there (run tests/vm/prepare-kernel)])])
    ])
    AC_MSG_CHECKING([for a kernel build tree])
    AS_IF([test "$with_kernel_build" = no], [],
          [test -n "$with_kernel_build" && test "$with_kernel_build" != yes], [
        AS_IF([test -f "$with_kernel_build/Makefile"],
            [SMX_KBUILD=$with_kernel_build],
            [AC_MSG_ERROR([--with-kernel-build=$with_kernel_build: not a kernel build tree (no Makefile)])])
    ], [test -f "/lib/modules/`uname -r`/build/Makefile"], [
        SMX_KBUILD="/lib/modules/`uname -r`/build"
    ], [test -n "$SMX_VM_KERNEL_DIR"], [
        SMX_KBUILD=`. "$SMX_VM_KERNEL_DIR/kernel.env" && echo "$KBUILD"`
    ])
    AC_MSG_RESULT([${SMX_KBUILD:-none}])
    AS_IF([test -n "$SMX_KBUILD"], [
        # The release modules built against the tree report (vermagic, uname -r of that
        # kernel). Debian's "make kernelrelease" and kernel.release give the package
        # version instead, so read utsrelease.h first.
        SMX_KABI=`sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$SMX_KBUILD/include/generated/utsrelease.h" 2>/dev/null`
        AS_IF([test -z "$SMX_KABI"],
            [SMX_KABI=`make -s -C "$SMX_KBUILD" kernelrelease 2>/dev/null`])
        AS_IF([test -z "$SMX_KABI"],
            [AC_MSG_ERROR([$SMX_KBUILD: cannot read its kernel release (include/generated/utsrelease.h)])])
    ])
    AC_SUBST([SMX_KBUILD])
    AC_SUBST([SMX_KABI])
    AC_SUBST([SMX_VM_KERNEL_DIR])
    AM_CONDITIONAL([SMX_BUILD_KMOD], [test -n "$SMX_KBUILD"])
])

dnl SMX_CHECK_MEMCHECK: valgrind/memcheck.h (Debian's valgrind package). With it the
dnl components tell memcheck about memory that another process wrote into this one (a
dnl knemlike copy, btl/smx's exchange push): valgrind cannot see such writes and would
dnl report the data as uninitialised wherever the application reads it. Without it the
dnl components work the same, and memcheck reports those reads. Sets SMX_MEMCHECK.
AC_DEFUN([SMX_CHECK_MEMCHECK], [
    AC_CHECK_HEADER([valgrind/memcheck.h],
        [AC_DEFINE([SMX_HAVE_MEMCHECK_H], [1], [valgrind/memcheck.h is available])
         SMX_MEMCHECK=yes],
        [SMX_MEMCHECK="no (install valgrind for memcheck-clean runs)"])
])

dnl SMX_CHECK_ATOMIC_FLAGS: the flags Open MPI's inline atomics need. opal_free_list_t's
dnl lock-free LIFO (threads in use) compares and swaps 16 bytes; where Open MPI found
dnl that in __sync builtins, x86-64 compilers emit the instruction only with -mcx16,
dnl else a call to a libatomic routine that Open MPI does not link (the component would
dnl then fail to load). Sets SMX_ATOMIC_CFLAGS.
AC_DEFUN([SMX_CHECK_ATOMIC_FLAGS], [
    AC_MSG_CHECKING([for the flags of 16-byte compare-and-swap])
    SMX_ATOMIC_CFLAGS=
    smx_save_CFLAGS=$CFLAGS
    for smx_flag in "" "-mcx16"; do
        CFLAGS="$smx_save_CFLAGS $smx_flag"
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[__int128 x;]],
            [[__int128 old = 0, nv = 1;
              return (int) __sync_val_compare_and_swap(&x, old, nv);]])],
            [SMX_ATOMIC_CFLAGS=$smx_flag; smx_cx16_found=yes; break])
    done
    CFLAGS=$smx_save_CFLAGS
    AS_IF([test "$smx_cx16_found" = yes],
        [AC_MSG_RESULT([${SMX_ATOMIC_CFLAGS:-none needed}])],
        [AC_MSG_RESULT([none work])
         AC_MSG_WARN([no 16-byte compare-and-swap: Open MPI's free lists may not link here])])
    AC_SUBST([SMX_ATOMIC_CFLAGS])
])
