/*
 * btl/smx's memcheck helper. valgrind's memcheck does not see
 * memory another process (or the kernel, in an ioctl or process_vm_writev) writes into
 * this one: without telling it, the application's first read of bytes received that way
 * is reported as a read of uninitialised memory, and bytes handed to the kernel to send
 * are not checked. A few instructions outside valgrind; nothing without valgrind's header
 * (configure reports which). smsc/knemlike has its own (smsc_knemlike.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef SMX_MEMCHECK_H
#define SMX_MEMCHECK_H

#ifdef SMX_HAVE_MEMCHECK_H
#    include <valgrind/memcheck.h>
/* [addr, addr+len) was written by another process: defined from now on */
#    define SMX_MEMCHECK_WRITTEN(addr, len) ((void) VALGRIND_MAKE_MEM_DEFINED((addr), (len)))
/* [addr, addr+len) is about to be read by the kernel for a peer: report what is not set */
#    define SMX_MEMCHECK_CHECK_DEFINED(addr, len) \
        ((void) VALGRIND_CHECK_MEM_IS_DEFINED((addr), (len)))
#    define SMX_MEMCHECK_RUNNING (0 != RUNNING_ON_VALGRIND)
#else
#    define SMX_MEMCHECK_WRITTEN(addr, len) ((void) 0)
#    define SMX_MEMCHECK_CHECK_DEFINED(addr, len) ((void) 0)
#    define SMX_MEMCHECK_RUNNING 0
#endif

#endif
