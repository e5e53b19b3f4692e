/*
 * dear-cma: an LD_PRELOAD library that makes cross-memory attach dearer per page, as on
 * machines where pinning and mapping a peer's pages costs several memcpys (the AMD EPYC VM
 * of 2026-11-23: 3-5), so that the single-copy side of a transport's switch can be seen
 * on a machine where CMA is cheap.
 *
 *   cc -O2 -shared -fPIC -o dear-cma.so tests/bench/dear-cma.c -ldl
 *   mpirun -x LD_PRELOAD=$PWD/dear-cma.so -x SMX_DEAR_CMA_NS=2000 ...
 *
 * Each process_vm_readv and process_vm_writev that moves bytes spins, after the real
 * call, SMX_DEAR_CMA_NS nanoseconds (default 1000) per 4 KiB page it moved (a page begun
 * counts whole).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <time.h>

typedef ssize_t (*cma_fn)(pid_t, const struct iovec *, unsigned long, const struct iovec *,
                          unsigned long, unsigned long);

static uint64_t now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

/* Spin for the pages a call moved (not sleep: the copy's cost is the caller's CPU). */
static ssize_t dearer(ssize_t moved)
{
    static long ns_per_page = -1;

    if (ns_per_page < 0) {
        const char *v = getenv("SMX_DEAR_CMA_NS");
        ns_per_page = NULL != v ? atol(v) : 1000;
        ns_per_page = ns_per_page < 0 ? 0 : ns_per_page;
    }
    if (moved > 0 && ns_per_page > 0) {
        const uint64_t until = now_ns()
                               + (uint64_t) ((moved + 4095) / 4096) * (uint64_t) ns_per_page;
        while (now_ns() < until) {
        }
    }
    return moved;
}

/* The C library's call named 'name' (found once), then the spin. */
static ssize_t dearer_call(cma_fn *real, const char *name, pid_t pid, const struct iovec *local,
                           unsigned long liovcnt, const struct iovec *remote,
                           unsigned long riovcnt, unsigned long flags)
{
    if (NULL == *real) {
        *real = (cma_fn) dlsym(RTLD_NEXT, name);
    }
    return dearer((*real)(pid, local, liovcnt, remote, riovcnt, flags));
}

ssize_t process_vm_readv(pid_t pid, const struct iovec *local, unsigned long liovcnt,
                         const struct iovec *remote, unsigned long riovcnt, unsigned long flags)
{
    static cma_fn real;
    return dearer_call(&real, "process_vm_readv", pid, local, liovcnt, remote, riovcnt, flags);
}

ssize_t process_vm_writev(pid_t pid, const struct iovec *local, unsigned long liovcnt,
                          const struct iovec *remote, unsigned long riovcnt, unsigned long flags)
{
    static cma_fn real;
    return dearer_call(&real, "process_vm_writev", pid, local, liovcnt, remote, riovcnt, flags);
}
