/*
 * The benchmark's pure logic (no MPI): size parsing, iteration scaling, the off-cache
 * buffer pool, medians. Unit-tested in tests/unit/test_bench_util.cc.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef SMX_BENCH_UTIL_H
#define SMX_BENCH_UTIL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "4096", "4K", "16M", "1G" (binary multiples). 0 on success, -1 on bad input/overflow. */
int bu_parse_size(const char *text, size_t *out);

/* A comma-separated list of sizes and ranges "MIN:MAX" (MIN, then powers of two up to
 * MAX, then MAX; "0:4M" is 0, 1, 2, 4, ... 4M). Sorted, duplicates removed. Returns the
 * number of sizes, or -1 on bad input or more than 'max' sizes. */
int bu_parse_size_list(const char *text, size_t *out, int max);

/* Iterations for one timed sample: enough to move about 'target_bytes', within
 * [min_iters, max_iters]. */
int bu_iterations(size_t msg_bytes, size_t target_bytes, int min_iters, int max_iters);

/* Buffers rotated through a pool so that successive messages touch different memory:
 * with a pool larger than the last-level cache, every message starts off-cache. */
struct bu_pool {
    size_t slot_bytes; /* message size rounded up to the alignment */
    size_t nslots;     /* slots in the pool (at least 'least'; 1 when not off-cache) */
    size_t next;       /* how many slots of the current cycle have been used */
    size_t *order;     /* NULL: slots in turn; else the order of a cycle (bu_pool_shuffle) */
};

/* Plan a pool of at most pool_bytes (0: no rotation) for messages of msg_bytes, each
 * slot aligned to 'align' (a power of two), with at least 'least' slots (and one) however
 * small the pool: messages in flight together each need their own. Slots in turn (a
 * shuffled pool is released before it is planned again). -1 on bad arguments. */
int bu_pool_plan(struct bu_pool *pool, size_t pool_bytes, size_t msg_bytes, size_t align,
                 size_t least);
/* Visit the slots in a pseudo-random order (the same one for the same seed), every
 * slot once a cycle, instead of in turn. Slots in turn lie one after the other, and a
 * CPU's prefetchers can learn that stride and fetch the next message's buffer before
 * it is used; in a shuffled order they cannot. -1 if out of memory. */
int bu_pool_shuffle(struct bu_pool *pool, unsigned long long seed);
/* Frees what bu_pool_shuffle allocated. */
void bu_pool_release(struct bu_pool *pool);
/* Byte offset of the next slot; advances round-robin. */
size_t bu_pool_next(struct bu_pool *pool);
/* Bytes the pool spans. */
size_t bu_pool_span(const struct bu_pool *pool);

/* Median of n values (n > 0); 'values' is reordered. */
double bu_median(double *values, int n);

/* Where a figure was measured, in words, for the benchmark's output: a host, a
 * User-mode Linux guest (its CPUs are the host's, at the host's speed, but its system
 * calls and page faults are dearer) or a QEMU guest (emulated: no evidence of speed). */
enum bu_system_kind { BU_SYSTEM_HOST, BU_SYSTEM_UML, BU_SYSTEM_QEMU };
/* cpuinfo: the text of /proc/cpuinfo (or NULL); vendor: the DMI system vendor's (or
 * NULL); release: the kernel's release; ncpus: the CPUs online; uml_host: what the UML
 * runner says of its host (or NULL: then UML's own "host" line). Writes, for instance,
 * "host: Linux 6.18.44, 2 CPUs, AMD EPYC (family 25, model 17)",
 * "UML guest: Linux 7.2.13 (User-mode Linux), 2 CPUs; host: AMD EPYC (family 25,
 * model 17), Linux 6.18.44" or "QEMU guest (emulated): Linux 7.2.13, 2 CPUs" into out
 * (truncated to n bytes) and returns the kind. */
enum bu_system_kind bu_describe_system(const char *cpuinfo, const char *vendor,
                                       const char *release, int ncpus, const char *uml_host,
                                       char *out, size_t n);

#ifdef __cplusplus
}
#endif

#endif
