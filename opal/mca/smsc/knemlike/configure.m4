# configure.m4 for smsc/knemlike in Open MPI's in-tree form (see Makefile.am here).
# SPDX-License-Identifier: BSD-3-Clause

# MCA_opal_smsc_knemlike_CONFIG([action-if-can-compile], [action-if-cannot-compile])
AC_DEFUN([MCA_opal_smsc_knemlike_CONFIG], [
    # Optional: valgrind's client requests (see the project's SMX_CHECK_MEMCHECK).
    AC_CHECK_HEADER([valgrind/memcheck.h],
        [AC_DEFINE([SMX_HAVE_MEMCHECK_H], [1], [valgrind/memcheck.h is available])])
    AC_CONFIG_FILES([opal/mca/smsc/knemlike/Makefile])
    # Linux only: the module is a Linux character device with an ioctl interface.
    AS_CASE([$host_os],
        [linux*], [SMSC_KNEMLIKE_CHECK_UAPI([$1], [$2])],
        [AS_IF([test "$with_knemlike" = yes || { test -n "$with_knemlike_uapi" && test "$with_knemlike_uapi" != no; }],
             [AC_MSG_ERROR([smsc/knemlike was asked for, but the knemlike module is Linux's only (this host: $host_os)])])
         $2])
    AC_SUBST([smsc_knemlike_CPPFLAGS])
])dnl

# Where autoconf read this file from. The ABI version the component is written for is the
# one of the uAPI header in the same ompi-smx tree (or of a copy beside this file).
m4_define([SMSC_KNEMLIKE_M4_DIR], m4_dquote(m4_bpatsubst(__file__, [/?configure\.m4$])))

# _SMSC_KNEMLIKE_ABI_OF(INCLUDE, CPPFLAGS): KNEMLIKE_ABI_VERSION, a number, as the
# preprocessor sees it after "#include INCLUDE" (a shell word); empty if it sees none.
m4_define([_SMSC_KNEMLIKE_ABI_OF],
[`printf '#include %s\nsmsc_knemlike_abi=KNEMLIKE_ABI_VERSION\n' $1 | $CPP $2 - 2>/dev/null | sed -n 's/^smsc_knemlike_abi= *\(@<:@0-9@:>@@<:@0-9@:>@*\)U* *$/\1/p'`])

# SMSC_KNEMLIKE_CHECK_UAPI([action-if-usable], [action-if-not]): the knemlike module's uAPI
# header, linux/knemlike.h, of the ABI version this component is written for: that of
# kmod/include/uapi/linux/knemlike.h in the ompi-smx tree holding this file, or, for this
# directory copied alone into an Open MPI tree, of a copy of that header beside this file
# (knemlike.h). The header compiled against is DIR/linux/knemlike.h with
# --with-knemlike-uapi=DIR, else where pkg-config's knemlike says (package knemlike-dev),
# else the compiler's. --with-knemlike or --with-knemlike-uapi asks for the component:
# then a header that is missing or of another ABI version stops configure, naming both.
# Unasked, a missing header leaves the component out, and one of another version too,
# with a warning; --without-knemlike leaves it out. Sets smsc_knemlike_CPPFLAGS.
AC_DEFUN([SMSC_KNEMLIKE_CHECK_UAPI], [
    AC_REQUIRE([AC_PROG_CPP])
    AC_ARG_WITH([knemlike],
        [AS_HELP_STRING([--with-knemlike],
            [build smsc/knemlike, or stop if its header linux/knemlike.h (package knemlike-dev, or --with-knemlike-uapi) is missing or of another ABI version (default: build it if a header of its ABI version is found)])])
    AC_ARG_WITH([knemlike-uapi],
        [AS_HELP_STRING([--with-knemlike-uapi=DIR],
            [directory holding linux/knemlike.h (the knemlike module's uapi include dir: kmod/include/uapi of ompi-smx); implies --with-knemlike])])
    smsc_knemlike_asked=
    smsc_knemlike_dir=
    AS_CASE([$with_knemlike],
        [yes], [smsc_knemlike_asked=--with-knemlike],
        [no | ""], [],
        [AC_MSG_ERROR([--with-knemlike=$with_knemlike: it takes no directory; give the one holding linux/knemlike.h as --with-knemlike-uapi=DIR])])
    AS_CASE([$with_knemlike_uapi],
        [no | ""], [],
        [yes], [AC_MSG_ERROR([--with-knemlike-uapi needs a directory: the one holding linux/knemlike.h])],
        [AS_IF([test "$with_knemlike" = no],
             [AC_MSG_ERROR([--without-knemlike and --with-knemlike-uapi=$with_knemlike_uapi contradict each other])])
         smsc_knemlike_asked=--with-knemlike-uapi=$with_knemlike_uapi
         smsc_knemlike_dir=$with_knemlike_uapi])

    smsc_knemlike_CPPFLAGS=
    smsc_knemlike_pkg_config=${PKG_CONFIG:-pkg-config}
    AS_IF([test "$with_knemlike" = no], [$2], [
        AC_MSG_CHECKING([for linux/knemlike.h])
        AS_IF([test -n "$smsc_knemlike_dir"], [
            smsc_knemlike_CPPFLAGS="-I$smsc_knemlike_dir"
            smsc_knemlike_looked="$smsc_knemlike_dir/linux/knemlike.h"
        ], [$smsc_knemlike_pkg_config --exists knemlike 2>/dev/null], [
            smsc_knemlike_CPPFLAGS=`$smsc_knemlike_pkg_config --cflags knemlike`
            smsc_knemlike_looked="`$smsc_knemlike_pkg_config --variable=includedir knemlike`/linux/knemlike.h (pkg-config knemlike)"
        ], [
            smsc_knemlike_looked="linux/knemlike.h in the compiler's include path (CPPFLAGS: ${CPPFLAGS:-none}; pkg-config knows no knemlike)"
        ])
        # The file the compiler takes, from the preprocessor's line markers.
        smsc_knemlike_header=`echo '#include <linux/knemlike.h>' | $CPP $CPPFLAGS $smsc_knemlike_CPPFLAGS - 2>/dev/null |
            sed -n 's|^# .* "\(.*/linux/knemlike\.h\)".*|\1|p' | sed 1q`
        AS_IF([test -n "$smsc_knemlike_dir" && test ! -f "$smsc_knemlike_dir/linux/knemlike.h"],
            [smsc_knemlike_header=])
        AS_IF([test -z "$smsc_knemlike_header"], [
            AC_MSG_RESULT([no])
            AS_IF([test -n "$smsc_knemlike_asked"],
                [AC_MSG_ERROR([$smsc_knemlike_asked: linux/knemlike.h not found; looked at $smsc_knemlike_looked. Install the knemlike-dev package, or give the directory holding linux/knemlike.h (kmod/include/uapi of ompi-smx) as --with-knemlike-uapi=DIR])])
            $2
        ], [
            AC_MSG_RESULT([$smsc_knemlike_header])
            # The version this component is written for, from the header of its own tree.
            smsc_knemlike_here="SMSC_KNEMLIKE_M4_DIR"
            AS_CASE([$smsc_knemlike_here], [/*], [],
                [smsc_knemlike_here="$srcdir/${smsc_knemlike_here:-.}"])
            smsc_knemlike_tree=`cd "$smsc_knemlike_here/../../../.." 2>/dev/null && pwd`
            smsc_knemlike_tree="${smsc_knemlike_tree:-$smsc_knemlike_here/../../../..}/kmod/include/uapi/linux/knemlike.h"
            smsc_knemlike_expect=
            for smsc_knemlike_ref in "$smsc_knemlike_tree" "$smsc_knemlike_here/knemlike.h"; do
                AS_IF([test -f "$smsc_knemlike_ref"], [
                    smsc_knemlike_inc="\"$smsc_knemlike_ref\""
                    smsc_knemlike_expect=_SMSC_KNEMLIKE_ABI_OF(["$smsc_knemlike_inc"], [$CPPFLAGS])
                    break])
            done
            smsc_knemlike_inc="<linux/knemlike.h>"
            smsc_knemlike_abi=_SMSC_KNEMLIKE_ABI_OF(["$smsc_knemlike_inc"], [$CPPFLAGS $smsc_knemlike_CPPFLAGS])
            AC_MSG_CHECKING([for the KNEMLIKE_ABI_VERSION smsc/knemlike is written for])
            AS_IF([test -z "$smsc_knemlike_expect"], [
                AC_MSG_RESULT([unknown])
                smsc_knemlike_why="cannot tell which ABI version smsc/knemlike is written for: no KNEMLIKE_ABI_VERSION in $smsc_knemlike_tree (its ompi-smx tree) nor in $smsc_knemlike_here/knemlike.h (a copy of that header, for this directory alone)"
                AS_IF([test -n "$smsc_knemlike_asked"],
                    [AC_MSG_ERROR([$smsc_knemlike_asked: $smsc_knemlike_why])],
                    [AC_MSG_WARN([smsc/knemlike is not built: $smsc_knemlike_why])])
                $2
            ], [
                AC_MSG_RESULT([$smsc_knemlike_expect])
                AC_MSG_CHECKING([whether $smsc_knemlike_header is of ABI version $smsc_knemlike_expect])
                smsc_knemlike_save_CPPFLAGS=$CPPFLAGS
                CPPFLAGS="$CPPFLAGS $smsc_knemlike_CPPFLAGS"
                AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include <linux/knemlike.h>
#if !defined(KNEMLIKE_ABI_VERSION) || KNEMLIKE_ABI_VERSION != $smsc_knemlike_expect
#error not the ABI version smsc/knemlike is written for
#endif
]], [[]])], [smsc_knemlike_abi_ok=yes], [smsc_knemlike_abi_ok=no])
                CPPFLAGS=$smsc_knemlike_save_CPPFLAGS
                AC_MSG_RESULT([$smsc_knemlike_abi_ok])
                AS_IF([test "$smsc_knemlike_abi_ok" = yes], [$1], [
                    smsc_knemlike_why="$smsc_knemlike_header has KNEMLIKE_ABI_VERSION ${smsc_knemlike_abi:-none (or it does not compile: see config.log)}; smsc/knemlike is written for ABI $smsc_knemlike_expect (from $smsc_knemlike_ref). Install the knemlike-dev of the same ompi-smx release, or give its kmod/include/uapi as --with-knemlike-uapi=DIR"
                    AS_IF([test -n "$smsc_knemlike_asked"],
                        [AC_MSG_ERROR([$smsc_knemlike_asked: $smsc_knemlike_why])],
                        [AC_MSG_WARN([smsc/knemlike is not built: $smsc_knemlike_why])])
                    $2])
            ])
        ])
    ])
])dnl
