/*
 * One-sided communication over whatever osc component Open MPI picks for a window of
 * user memory on this node: MPI_Put and MPI_Get under fences and under passive-target
 * locks, at odd sizes and unaligned offsets, a strided datatype on the target side, and
 * MPI_Accumulate (sum) from every rank into one target. Every byte is checked, and the
 * bytes around each access must stay untouched: in the target window, and the guard
 * bytes around the origin buffers of puts and gets (whose data must stay as it was on
 * the side that is only read).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t rma_sizes[] = {1, 7, 4096, 4099, 65536 + 5, 1 * T_MiB + 1};
#define NRSIZES ((int) (sizeof(rma_sizes) / sizeof(rma_sizes[0])))
#define GUARD 64

int main(int argc, char **argv)
{
    int errors = 0;
    size_t max = rma_sizes[NRSIZES - 1] + 2 * GUARD + 8;
    unsigned char *base;
    MPI_Win win;
    char what[128];

    t_init(&argc, &argv, "rma");
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    base = malloc(max);
    T_CHECK_MPI(MPI_Win_create(base, (MPI_Aint) max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));

    for (int k = 0; k < NRSIZES; ++k) {
        size_t len = rma_sizes[k], off = GUARD + (size_t) k % 8;
        unsigned char *src = t_alloc(len, (size_t) k % 5, GUARD);

        /* 1. Put into the right neighbour, fence-synchronised */
        T_CHECK_MPI(MPI_Win_fence(0, win));
        memset(base, T_POISON, max); /* own window: only local accesses in this epoch */
        T_CHECK_MPI(MPI_Win_fence(0, win));
        t_fill(src, len, t_rank, 2 * k);
        T_CHECK_MPI(MPI_Put(src, (int) len, MPI_BYTE, right, (MPI_Aint) off, (int) len,
                            MPI_BYTE, win));
        T_CHECK_MPI(MPI_Win_fence(0, win));
        snprintf(what, sizeof(what), "put of %zu bytes from rank %d", len, left);
        errors += t_check(base + off, len, left, 2 * k, what);
        errors += t_check_poison(base, off, what);
        errors += t_check_poison(base + off + len, max - off - len, what);
        errors += t_check(src, len, t_rank, 2 * k, "origin buffer of a put");
        errors += t_check_guards(src, len, GUARD, "origin buffer of a put");

        /* 2. Get from the left neighbour under a passive-target lock: what it put there
         *    in step 1 came from its own left neighbour */
        unsigned char *dst = t_alloc(len, (size_t) (k + 3) % 7, GUARD);
        int left2 = (left + t_size - 1) % t_size;
        T_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        T_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win));
        T_CHECK_MPI(MPI_Get(dst, (int) len, MPI_BYTE, left, (MPI_Aint) off, (int) len, MPI_BYTE,
                            win));
        T_CHECK_MPI(MPI_Win_unlock(left, win));
        snprintf(what, sizeof(what), "get of %zu bytes from rank %d", len, left);
        errors += t_check(dst, len, left2, 2 * k, what);
        errors += t_check_guards(dst, len, GUARD, what);
        t_free(dst, (size_t) (k + 3) % 7, GUARD);
        t_free(src, (size_t) k % 5, GUARD);
        T_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        /* the right neighbour's get must have left this window as step 1 wrote it */
        T_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t_rank, 0, win));
        snprintf(what, sizeof(what), "window after a get of %zu bytes by rank %d", len, right);
        errors += t_check(base + off, len, left, 2 * k, what);
        errors += t_check_poison(base, off, what);
        errors += t_check_poison(base + off + len, max - off - len, what);
        T_CHECK_MPI(MPI_Win_unlock(t_rank, win));
    }

    /* 3. A strided target: every other 3-byte block of the right neighbour's window */
    {
        const int count = 1000, block = 3, stride = 6;
        MPI_Datatype vec;
        unsigned char *src = t_alloc((size_t) count * block, 1, 0);
        T_CHECK_MPI(MPI_Type_vector(count, block, stride, MPI_BYTE, &vec));
        T_CHECK_MPI(MPI_Type_commit(&vec));
        T_CHECK_MPI(MPI_Win_fence(0, win));
        memset(base, T_POISON, max);
        T_CHECK_MPI(MPI_Win_fence(0, win));
        t_fill(src, (size_t) count * block, t_rank, 99);
        T_CHECK_MPI(MPI_Put(src, count * block, MPI_BYTE, right, GUARD, 1, vec, win));
        T_CHECK_MPI(MPI_Win_fence(0, win));
        unsigned char *packed = malloc((size_t) count * block);
        for (int i = 0; i < count; ++i) {
            memcpy(packed + i * block, base + GUARD + i * stride, (size_t) block);
            if (0 != t_check_poison(base + GUARD + i * stride + block, (size_t) (stride - block),
                                    "gap of a strided put")) {
                errors++;
                break;
            }
        }
        errors += t_check(packed, (size_t) count * block, left, 99, "strided put");
        free(packed);
        t_free(src, 1, 0);
        MPI_Type_free(&vec);
    }

    /* 4. Accumulate: every rank adds (rank + 1) * (i + 1) into rank 0's integers */
    {
        const int n = 4099;
        int *contrib = malloc(sizeof(int) * n);
        T_CHECK_MPI(MPI_Win_fence(0, win));
        memset(base, 0, max);
        T_CHECK_MPI(MPI_Win_fence(0, win));
        for (int i = 0; i < n; ++i) {
            contrib[i] = (t_rank + 1) * (i + 1);
        }
        T_CHECK_MPI(MPI_Accumulate(contrib, n, MPI_INT, 0, 0, n, MPI_INT, MPI_SUM, win));
        T_CHECK_MPI(MPI_Win_fence(0, win));
        if (0 == t_rank) {
            const int *sum = (const int *) base;
            int ranks = t_size * (t_size + 1) / 2;
            for (int i = 0; i < n; ++i) {
                if (sum[i] != ranks * (i + 1)) {
                    fprintf(stderr, "rma: accumulate: element %d is %d, expected %d\n", i,
                            sum[i], ranks * (i + 1));
                    errors++;
                    break;
                }
            }
        }
        free(contrib);
    }

    T_CHECK_MPI(MPI_Win_free(&win));
    free(base);
    return t_finish(errors);
}
