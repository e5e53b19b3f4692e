/*
 * A receiver that computes before each receive (process skew), then one that waits: btl/smx
 * should buffer the sender's larger messages while the receiver is late, and go back to
 * rendezvous once it is in step (btl_smx_skew.c: the receiver says so in its word to the
 * sender, SMX_KIND_WANT).
 *
 *   latereceiver on|off WINDOWS WINDOW LEN USEC
 *
 * 1. Held: rank 0 posts WINDOW nonblocking sends of LEN bytes to rank 1 and waits for them,
 *    WINDOWS times; rank 1 computes USEC microseconds (no MPI) before each receive. Every
 *    byte is checked.
 * 2. In step: 64 ping-pongs of LEN bytes, rank 1's receive posted before rank 0 sends.
 * 3. Then 16 more, counted apart: by then the sender is back to rendezvous.
 * Rank 0 prints its median window time and what btl/smx did (MPI_T; -1: not found):
 *   "latereceiver: rank 0: window U us; eager sends held H, in step S, last L"
 *   "latereceiver: rank 1: late L, caught up C"
 * With "on" (btl_smx_skew on, the default) it asserts: rank 1 found itself late and caught up
 * again, rank 0 sent eagerly while it was late and none of the last 16 eagerly. With
 * "off": no counter moved. Then "latereceiver: PASS" or
 * "latereceiver: FAIL ...". Used by tests/check-smx-ways.sh.
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
    return (uint8_t) ((size_t) msg * 31u + i * 7u + (i >> 11));
}

static void fill(uint8_t *buf, size_t len, int msg)
{
    for (size_t i = 0; i < len; ++i) {
        buf[i] = byte_of(msg, i);
    }
}

static int check(const uint8_t *buf, size_t len, int msg)
{
    for (size_t i = 0; i < len; ++i) {
        if (buf[i] != byte_of(msg, i)) {
            fprintf(stderr, "latereceiver: FAIL message %d byte %zu is %u, not %u\n", msg, i,
                    buf[i], byte_of(msg, i));
            return 1;
        }
    }
    return 0;
}

static void compute(double usec)
{
    const double until = MPI_Wtime() + usec * 1e-6;
    volatile double x = 1.0;

    while (MPI_Wtime() < until) {
        x = x * 1.0000001 + 1e-9;
    }
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rank, size, errors = 0, msg = 0, on, provided;
    long long held, instep = -1, last, late, caught;
    struct pvar eager, lt, cu;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (6 != argc || 2 != size) {
        if (0 == rank) {
            fprintf(stderr, "usage (2 ranks): latereceiver on|off WINDOWS WINDOW LEN USEC\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    on = 0 == strcmp(argv[1], "on");
    const int windows = atoi(argv[2]), window = atoi(argv[3]);
    const size_t len = strtoul(argv[4], NULL, 0);
    const double usec = atof(argv[5]);
    uint8_t *buf = malloc(len * (size_t) window);
    MPI_Request *req = malloc(sizeof(*req) * (size_t) window);
    double *times = malloc(sizeof(double) * (size_t) windows);
    char ack = 0;

    if (NULL == buf || NULL == req || NULL == times || windows < 1 || window < 1) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    pvar_bind(&eager, "btl_smx_skew_eager_sends", MPI_T_PVAR_CLASS_COUNTER);
    pvar_bind(&lt, "btl_smx_skew_late", MPI_T_PVAR_CLASS_COUNTER);
    pvar_bind(&cu, "btl_smx_skew_caught_up", MPI_T_PVAR_CLASS_COUNTER);

    /* 1. held */
    for (int w = 0; w < windows; ++w) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) {
            for (int i = 0; i < window; ++i) {
                fill(buf + (size_t) i * len, len, msg + i);
            }
            const double t0 = MPI_Wtime();
            for (int i = 0; i < window; ++i) {
                MPI_Isend(buf + (size_t) i * len, (int) len, MPI_BYTE, 1, i, MPI_COMM_WORLD,
                          &req[i]);
            }
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            times[w] = MPI_Wtime() - t0;
            MPI_Recv(&ack, 1, MPI_CHAR, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int i = 0; i < window; ++i) {
                compute(usec);
                MPI_Recv(buf, (int) len, MPI_BYTE, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                errors += check(buf, len, msg + i);
            }
            MPI_Send(&ack, 1, MPI_CHAR, 0, 99, MPI_COMM_WORLD);
        }
        msg += window;
    }
    held = pvar_take(&eager);
    pvar_bind(&eager, "btl_smx_skew_eager_sends", MPI_T_PVAR_CLASS_COUNTER);

    /* 2. and 3. in step: rank 1 waits in its receive before rank 0 sends */
    for (int phase = 0; phase < 2; ++phase) {
        for (int i = 0; i < (0 == phase ? 64 : 16); ++i, ++msg) {
            if (0 == rank) {
                MPI_Recv(&ack, 1, MPI_CHAR, 1, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                compute(20.0); /* rank 1 waits in MPI_Recv meanwhile */
                fill(buf, len, msg);
                MPI_Send(buf, (int) len, MPI_BYTE, 1, 97, MPI_COMM_WORLD);
            } else {
                MPI_Request r;
                MPI_Irecv(buf, (int) len, MPI_BYTE, 0, 97, MPI_COMM_WORLD, &r);
                MPI_Send(&ack, 1, MPI_CHAR, 0, 98, MPI_COMM_WORLD);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
                errors += check(buf, len, msg);
            }
        }
        if (0 == phase) {
            instep = pvar_take(&eager);
            pvar_bind(&eager, "btl_smx_skew_eager_sends", MPI_T_PVAR_CLASS_COUNTER);
        }
    }
    last = pvar_take(&eager);
    late = pvar_take(&lt);
    caught = pvar_take(&cu);

    if (0 == rank) {
        qsort(times, (size_t) windows, sizeof(double), cmp_double);
        printf("latereceiver: rank 0: window %.1f us; eager sends held %lld, in step %lld, last "
               "%lld\n", times[windows / 2] * 1e6, held, instep, last);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (1 == rank) {
        printf("latereceiver: rank 1: late %lld, caught up %lld\n", late, caught);
        fflush(stdout);
    }
    if (0 == rank) {
        long long r1[2] = {0, 0};
        MPI_Recv(r1, 2, MPI_LONG_LONG, 1, 96, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        late = r1[0];
        caught = r1[1];
        if (on) {
            if (late < 1 || caught < 1) {
                printf("latereceiver: FAIL rank 1 was late %lld times, caught up %lld (want "
                       ">= 1 each)\n", late, caught);
                errors++;
            }
            if (held < 1 || 0 != last) {
                printf("latereceiver: FAIL rank 0 sent %lld held messages eagerly (want >= 1), "
                       "%lld of the last 16 (want 0)\n", held, last);
                errors++;
            }
        } else if (0 != late || 0 != caught || 0 != held || 0 != instep || 0 != last) {
            printf("latereceiver: FAIL skew off, yet a counter moved\n");
            errors++;
        }
    } else {
        long long r1[2] = {late, caught};
        MPI_Send(r1, 2, MPI_LONG_LONG, 0, 96, MPI_COMM_WORLD);
    }
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("latereceiver: %s\n", 0 == errors ? "PASS" : "FAIL");
    }
    free(buf);
    free(req);
    free(times);
    MPI_T_finalize();
    MPI_Finalize();
    return 0 != errors;
}
