/*
 * A sender that computes while its rendezvous waits: rank 1 posts a nonblocking send of
 * LEN bytes, computes for USEC microseconds without calling MPI, then waits for the send;
 * N times. Rank 0 receives each message and checks every byte. A double copy cannot go
 * on while the sender is away from MPI (the sender's progress copies the pieces in); a
 * single copy can (the receiver pulls alone). btl/smx's receiver, measuring each way a
 * sender's messages take (btl_smx_choice.h), should see that and pull from rank 1 by
 * single copy.
 *
 *   latesender N LEN USEC
 *
 * Ranks above 1, if any, only take part in the barriers: processes that crowd the node
 * (more of them than hardware threads) without sending.
 *
 * Where rank 1 pushes its rendezvous ahead (btl_smx_push_max, where rank 0's word says
 * double copy), it copies each message as it sends it, so that nothing waits for it: rank
 * 0 takes each pushed one by double copy.
 *
 * Rank 0 prints what btl/smx did during the N messages, read through MPI_T (-1: not
 * found), and the median time its receives took; rank 1 how many of its rendezvous it
 * pushed ahead:
 *   "latesender: rank 0: gets by single copy S, by double copy D, changes C; median
 *    receive U us"
 *   "latesender: rank 1: pushed ahead P"
 * then "latesender: PASS" or "latesender: FAIL ...". Used by tests/check-smx-ways.sh.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pvar.h"

static uint8_t byte_of(int msg, size_t i)
{
    return (uint8_t) ((size_t) msg * 29u + i * 13u + (i >> 9));
}

static void fill(uint8_t *buf, size_t len, int msg)
{
    for (size_t i = 0; i < len; ++i) {
        buf[i] = byte_of(msg, i);
    }
}

/* 1 (and the first wrong byte said) if buf does not hold message msg, else 0. */
static int wrong(const uint8_t *buf, size_t len, int msg)
{
    for (size_t i = 0; i < len; ++i) {
        if (buf[i] != byte_of(msg, i)) {
            fprintf(stderr, "latesender: FAIL: message %d, byte %zu is 0x%02x, expected 0x%02x\n",
                    msg, i, buf[i], byte_of(msg, i));
            return 1;
        }
    }
    return 0;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rank, size, provided, errors = 0;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4 || size < 2 || atoi(argv[1]) < 1 || atol(argv[2]) < 1 || atol(argv[3]) < 0) {
        if (0 == rank) {
            fprintf(stderr, "usage: mpirun -np 2 (or more) latesender N LEN USEC\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int n = atoi(argv[1]);
    const size_t len = (size_t) atol(argv[2]);
    const double compute = atof(argv[3]) * 1e-6;
    uint8_t *buf = malloc(len);
    double *took = malloc(sizeof(*took) * (size_t) n);
    if (NULL == buf || NULL == took) {
        fprintf(stderr, "latesender: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(buf, 0, len);
    struct pvar single, dbl, changes, pushed;
    if (1 == rank) {
        pvar_bind(&pushed, "btl_smx_pushes_ahead", MPI_T_PVAR_CLASS_COUNTER);
    }
    if (0 == rank) {
        pvar_bind(&single, "btl_smx_gets_single_copy", MPI_T_PVAR_CLASS_COUNTER);
        pvar_bind(&dbl, "btl_smx_gets_double_copy", MPI_T_PVAR_CLASS_COUNTER);
        pvar_bind(&changes, "btl_smx_copy_switches", MPI_T_PVAR_CLASS_COUNTER);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int m = 0; m < n; ++m) {
        if (1 == rank) {
            MPI_Request req;
            fill(buf, len, m);
            MPI_Isend(buf, (int) len, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &req);
            for (double t0 = MPI_Wtime(); MPI_Wtime() - t0 < compute;) {
                /* computing: no MPI call, so no progress */
            }
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else if (0 == rank) {
            memset(buf, 0, len);
            double t0 = MPI_Wtime();
            MPI_Recv(buf, (int) len, MPI_BYTE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            took[m] = MPI_Wtime() - t0;
            errors += wrong(buf, len, m);
        }
        /* the next message once this one is checked: each send meets a waiting receiver */
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (1 == rank) {
        printf("latesender: rank 1: pushed ahead %lld\n", pvar_take(&pushed));
        fflush(stdout);
    }
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        long long s = pvar_take(&single), d = pvar_take(&dbl), c = pvar_take(&changes);
        qsort(took, (size_t) n, sizeof(*took), by_value);
        printf("latesender: rank 0: gets by single copy %lld, by double copy %lld, changes "
               "%lld; median receive %.0f us\n", s, d, c, took[n / 2] * 1e6);
        if (0 == errors) {
            printf("latesender: PASS\n");
        } else {
            printf("latesender: FAIL (%d messages wrong)\n", errors);
        }
    }
    free(took);
    free(buf);
    MPI_T_finalize();
    MPI_Finalize();
    return 0 == errors ? 0 : 1;
}
