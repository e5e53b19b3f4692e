/*
 * Collectives over the transport: bcast from every root, allreduce (the arithmetic is
 * checked against the closed form), alltoall and alltoallv with uneven counts, small and
 * multi-MiB. Blocks are patterned by (source, destination), so a block delivered to the
 * wrong place is caught.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t coll_sizes[] = {1, 13, 1000, 8191, 65537, 1 * T_MiB + 3, 4 * T_MiB};
#define NCOLL ((int) (sizeof(coll_sizes) / sizeof(coll_sizes[0])))

/* Message id of the block that 'src' sends to 'dst' in test 'test'. */
static int block_id(int test, int dst)
{
    return test * 64 + dst;
}

static int test_bcast(size_t len, int test)
{
    int errors = 0;
    uint8_t *buf = t_alloc(len, 1, 16);
    for (int root = 0; root < t_size; ++root) {
        char what[96];
        if (t_rank == root) {
            t_fill(buf, len, root, test + root);
        } else {
            memset(buf, T_POISON, len);
        }
        T_CHECK_MPI(MPI_Bcast(buf, (int) len, MPI_BYTE, root, MPI_COMM_WORLD));
        snprintf(what, sizeof(what), "bcast of %zu bytes from root %d", len, root);
        errors += t_check(buf, len, root, test + root, what);
        errors += t_check_poison(buf + len, 16, what);
    }
    t_free(buf, 1, 16);
    return errors;
}

static int test_allreduce(size_t len)
{
    size_t n = len / sizeof(long) + 1;
    long *in = malloc(n * sizeof(long)), *out = malloc(n * sizeof(long));
    double *din = malloc(n * sizeof(double)), *dout = malloc(n * sizeof(double));
    int errors = 0;
    long p = t_size;

    for (size_t i = 0; i < n; ++i) {
        in[i] = (long) i * (t_rank + 1) + t_rank;
        din[i] = 0.5 * (double) t_rank + (double) (i % 97);
    }
    T_CHECK_MPI(MPI_Allreduce(in, out, (int) n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    T_CHECK_MPI(MPI_Allreduce(din, dout, (int) n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    for (size_t i = 0; i < n && !errors; ++i) {
        long want = (long) i * p * (p + 1) / 2 + p * (p - 1) / 2;
        double dwant = 0.5 * (double) (t_size - 1) + (double) (i % 97);
        if (out[i] != want || dout[i] != dwant) {
            fprintf(stderr, "collectives: rank %d: allreduce of %zu elements: element %zu is %ld / %g, "
                    "expected %ld / %g\n", t_rank, n, i, out[i], dout[i], want, dwant);
            errors++;
        }
    }
    free(in);
    free(out);
    free(din);
    free(dout);
    return errors;
}

static int test_alltoall(size_t block, int test)
{
    uint8_t *sbuf = malloc(block * (size_t) t_size + 1);
    uint8_t *rbuf = malloc(block * (size_t) t_size + 1);
    int errors = 0;

    for (int dst = 0; dst < t_size; ++dst) {
        t_fill(sbuf + (size_t) dst * block, block, t_rank, block_id(test, dst));
    }
    memset(rbuf, T_POISON, block * (size_t) t_size);
    T_CHECK_MPI(MPI_Alltoall(sbuf, (int) block, MPI_BYTE, rbuf, (int) block, MPI_BYTE,
                             MPI_COMM_WORLD));
    for (int src = 0; src < t_size; ++src) {
        char what[96];
        snprintf(what, sizeof(what), "alltoall block of %zu bytes from rank %d", block, src);
        errors += t_check(rbuf + (size_t) src * block, block, src, block_id(test, t_rank), what);
    }
    free(sbuf);
    free(rbuf);
    return errors;
}

/* Uneven: what src sends to dst depends on both, and some pairs send nothing. */
static int v_count(size_t base, int src, int dst)
{
    if ((src + 2 * dst) % 5 == 4) {
        return 0;
    }
    return (int) (base + (size_t) ((src * 7 + dst * 3) % 11) * (base / 8 + 1));
}

static int test_alltoallv(size_t base, int test)
{
    int *scounts = malloc(sizeof(int) * (size_t) t_size), *sdispls = malloc(sizeof(int) * (size_t) t_size);
    int *rcounts = malloc(sizeof(int) * (size_t) t_size), *rdispls = malloc(sizeof(int) * (size_t) t_size);
    int stotal = 0, rtotal = 0, errors = 0;

    for (int p = 0; p < t_size; ++p) {
        scounts[p] = v_count(base, t_rank, p);
        rcounts[p] = v_count(base, p, t_rank);
        sdispls[p] = stotal;
        rdispls[p] = rtotal + 3 * p; /* gaps between blocks must stay poisoned */
        stotal += scounts[p];
        rtotal += rcounts[p];
    }
    size_t rspan = (size_t) rtotal + 3 * (size_t) t_size;
    uint8_t *sbuf = malloc((size_t) stotal + 1), *rbuf = malloc(rspan + 1);
    for (int p = 0; p < t_size; ++p) {
        t_fill(sbuf + sdispls[p], (size_t) scounts[p], t_rank, block_id(test, p));
    }
    memset(rbuf, T_POISON, rspan);
    T_CHECK_MPI(MPI_Alltoallv(sbuf, scounts, sdispls, MPI_BYTE, rbuf, rcounts, rdispls, MPI_BYTE,
                              MPI_COMM_WORLD));
    for (int p = 0; p < t_size; ++p) {
        char what[96];
        snprintf(what, sizeof(what), "alltoallv block of %d bytes from rank %d", rcounts[p], p);
        errors += t_check(rbuf + rdispls[p], (size_t) rcounts[p], p, block_id(test, t_rank), what);
        errors += t_check_poison(rbuf + rdispls[p] + rcounts[p], 3, what);
    }
    free(sbuf);
    free(rbuf);
    free(scounts);
    free(sdispls);
    free(rcounts);
    free(rdispls);
    return errors;
}

int main(int argc, char **argv)
{
    int errors = 0;
    t_init(&argc, &argv, "collectives");
    for (int i = 0; i < NCOLL; ++i) {
        size_t len = coll_sizes[i];
        errors += test_bcast(len, 100 * i);
        errors += test_allreduce(len);
        errors += test_alltoall(len, 2 * i);
        errors += test_alltoallv(len / 2 + 1, 2 * i + 1);
    }
    return t_finish(errors);
}
