/*
 * os-costs: what the operating system charges a process, for telling a guest's figures
 * from the host's (docs/performance.md, "The UML guest"): run it on the host and in the
 * guest (tests/vm/run-in-uml) and compare line by line.
 *
 *   os-costs [--reps N]
 *
 * Prints, each the median of N (default 11) repetitions, in microseconds:
 *   syscall       getppid(), a system call that does nothing
 *   clock         clock_gettime(CLOCK_MONOTONIC) (MPI_Wtime's clock; a vDSO call on a host)
 *   fault         the first touch of a page of fresh anonymous memory (64 MiB, per page)
 *   memcpy_1m     a 1 MiB memcpy, in cache (the same buffers again)
 *   memcpy_64m    a 64 MiB memcpy, out of cache (per MiB)
 *   yield         sched_yield() with nothing else to run
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "bench_util.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

/* Keeps the compiler from dropping a copy nobody reads. */
static volatile unsigned char sink;

static double per_call(int what, int calls)
{
    struct timespec t;
    double t0 = now();
    for (int i = 0; i < calls; ++i) {
        if (0 == what) {
            (void) getppid();
        } else if (1 == what) {
            clock_gettime(CLOCK_MONOTONIC, &t);
        } else {
            sched_yield();
        }
    }
    return (now() - t0) / calls * 1e6;
}

static double fault_per_page(size_t bytes)
{
    unsigned char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    if (MAP_FAILED == p) {
        perror("os-costs: mmap");
        exit(1);
    }
    const long page = sysconf(_SC_PAGESIZE);
    double t0 = now();
    for (size_t off = 0; off < bytes; off += (size_t) page) {
        p[off] = 1;
    }
    double t = (now() - t0) / (double) (bytes / (size_t) page) * 1e6;
    munmap(p, bytes);
    return t;
}

static double copy_time(unsigned char *dst, const unsigned char *src, size_t bytes)
{
    double t0 = now();
    memcpy(dst, src, bytes);
    double t = (now() - t0) * 1e6;
    sink = dst[bytes / 2];
    return t;
}

int main(int argc, char **argv)
{
    int reps = 11;
    if (3 == argc && 0 == strcmp(argv[1], "--reps")) {
        reps = atoi(argv[2]);
    }
    if (reps < 1 || reps > 1000 || (1 != argc && 3 != argc)) {
        fprintf(stderr, "usage: os-costs [--reps N (1 to 1000)]\n");
        return 2;
    }
    const size_t big = 64u << 20, small = 1u << 20;
    unsigned char *a = malloc(big), *b = malloc(big);
    double *t[6];
    for (int k = 0; k < 6; ++k) {
        t[k] = malloc(sizeof(double) * (size_t) reps);
    }
    if (!a || !b || !t[5]) {
        fprintf(stderr, "os-costs: out of memory\n");
        return 1;
    }
    memset(a, 1, big); /* faulted in: only the fault line measures first touches */
    memset(b, 2, big);
    for (int r = 0; r < reps; ++r) {
        t[0][r] = per_call(0, 20000);
        t[1][r] = per_call(1, 20000);
        t[2][r] = fault_per_page(big);
        copy_time(b, a, small); /* (in cache from here) */
        t[3][r] = copy_time(b, a, small);
        t[4][r] = copy_time(b, a, big) / (double) (big >> 20);
        t[5][r] = per_call(2, 20000);
    }
    const char *names[6] = {"syscall", "clock", "fault", "memcpy_1m", "memcpy_64m", "yield"};
    for (int k = 0; k < 6; ++k) {
        printf("%-11s %10.3f\n", names[k], bu_median(t[k], reps));
    }
    return 0;
}
