/*
 * split-copy: does this machine let two cores copy one message faster than one core?
 * That is what a cooperative copy (both processes of a rendezvous copying half of it,
 * MVAPICH's "Cooperative Rendezvous Protocols", SC18) can gain at most: its two halves
 * run on two cores at once, against the one core of a single copy. No MPI, no kernel
 * module: two threads of one process, each pinned to a CPU, copy with memcpy.
 *
 * For each size, interleaved, --reps times: one thread copies the whole message ("one"),
 * then both copy a half each, started together ("two": from the start signal to the later
 * of the two ends). Buffers in cache (the same source and destination every time) or,
 * with --off-cache MB, rotated through pools of that size each. Every copy of the last
 * repetition is checked byte by byte.
 *
 * Usage: split-copy [--cpus A,B] [--sizes LIST] [--reps N] [--off-cache MB]
 * Prints, per size, the medians of one and two (us) and one/two: above 1, two cores copy
 * a message faster than one; near 1, one core already takes what the memory gives.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "bench_util.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile uint64_t start_gen, done_gen;
static unsigned char *helper_to;
static const unsigned char *helper_from;
static size_t helper_len;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec * 1e6 + (double) t.tv_nsec / 1e3;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (0 != pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
        fprintf(stderr, "split-copy: cannot pin to CPU %d\n", cpu);
        exit(2);
    }
}

static void *helper(void *arg)
{
    uint64_t seen = 0;
    pin(*(int *) arg);
    for (;;) {
        uint64_t gen;
        while ((gen = __atomic_load_n(&start_gen, __ATOMIC_ACQUIRE)) == seen) {
        }
        if (UINT64_MAX == gen) {
            return NULL;
        }
        seen = gen;
        memcpy(helper_to, helper_from, helper_len);
        __atomic_store_n(&done_gen, gen, __ATOMIC_RELEASE);
    }
}

int main(int argc, char **argv)
{
    int cpus[2] = {0, 1}, reps = 11, nsizes;
    size_t sizes[64], pool_bytes = 0;
    const char *size_text = "256K,1M,4M,16M";

    for (int i = 1; i + 1 < argc; i += 2) {
        if (0 == strcmp(argv[i], "--cpus")) {
            if (2 != sscanf(argv[i + 1], "%d,%d", &cpus[0], &cpus[1])) {
                return 2;
            }
        } else if (0 == strcmp(argv[i], "--sizes")) {
            size_text = argv[i + 1];
        } else if (0 == strcmp(argv[i], "--reps")) {
            reps = atoi(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "--off-cache")) {
            pool_bytes = (size_t) atol(argv[i + 1]) << 20;
        } else {
            fprintf(stderr, "split-copy: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    nsizes = bu_parse_size_list(size_text, sizes, 64);
    if (nsizes <= 0 || reps < 1) {
        fprintf(stderr, "split-copy: bad --sizes or --reps\n");
        return 2;
    }
    pthread_t thread;
    pin(cpus[0]);
    if (0 != pthread_create(&thread, NULL, helper, &cpus[1])) {
        return 2;
    }
    printf("# split-copy: CPUs %d and %d, %s, medians of %d\n", cpus[0], cpus[1],
           0 == pool_bytes ? "in cache" : "off cache", reps);
    printf("%10s %12s %12s %9s\n", "bytes", "one (us)", "two (us)", "one/two");
    int bad = 0;
    uint64_t gen = 0;
    for (int s = 0; s < nsizes; ++s) {
        const size_t len = sizes[s], half = len / 2;
        struct bu_pool pool;
        if (0 == len || 0 != bu_pool_plan(&pool, pool_bytes, len, 4096, 1)) {
            continue;
        }
        const size_t span = bu_pool_span(&pool);
        unsigned char *src = aligned_alloc(4096, span), *dst = aligned_alloc(4096, span);
        double *one = calloc((size_t) reps, sizeof(double));
        double *two = calloc((size_t) reps, sizeof(double));
        if (NULL == src || NULL == dst || NULL == one || NULL == two) {
            return 2;
        }
        for (size_t i = 0; i < span; ++i) {
            src[i] = (unsigned char) (i * 131 + s);
        }
        memset(dst, 0, span);
        for (int r = 0; r < reps; ++r) {
            size_t at = bu_pool_next(&pool);
            double t = now_us();
            memcpy(dst + at, src + at, len);
            one[r] = now_us() - t;
            at = bu_pool_next(&pool);
            helper_to = dst + at + half;
            helper_from = src + at + half;
            helper_len = len - half;
            t = now_us();
            __atomic_store_n(&start_gen, ++gen, __ATOMIC_RELEASE);
            memcpy(dst + at, src + at, half);
            while (__atomic_load_n(&done_gen, __ATOMIC_ACQUIRE) != gen) {
            }
            two[r] = now_us() - t;
            if (r == reps - 1 && 0 != memcmp(dst + at, src + at, len)) {
                fprintf(stderr, "split-copy: %zu bytes copied wrong\n", len);
                bad = 1;
            }
        }
        const double o = bu_median(one, reps), w = bu_median(two, reps);
        printf("%10zu %12.2f %12.2f %9.2f\n", len, o, w, w > 0 ? o / w : 0);
        free(src);
        free(dst);
        free(one);
        free(two);
    }
    __atomic_store_n(&start_gen, UINT64_MAX, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
    return bad;
}
