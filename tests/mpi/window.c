/*
 * Windows of non-blocking operations: each rank keeps 64 Irecv and 64 Isend in flight to
 * and from both ring neighbours at once (bidirectional), mixed sizes, completed with
 * Waitall, Waitany and Testsome in turn. Every message is checked.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

#define WINDOW 64

static const size_t window_sizes[] = {0, 5, 512, 4099, 12000, 65536, 131075, 1 * T_MiB};
#define NWSIZES ((int) (sizeof(window_sizes) / sizeof(window_sizes[0])))

static size_t size_of(int round, int i)
{
    return window_sizes[(round + i) % NWSIZES];
}

static void complete(int n, MPI_Request *reqs, int how)
{
    if (0 == how) {
        T_CHECK_MPI(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
    } else if (1 == how) {
        for (int done = 0, idx; done < n; ++done) {
            T_CHECK_MPI(MPI_Waitany(n, reqs, &idx, MPI_STATUS_IGNORE));
        }
    } else {
        int *idx = malloc(sizeof(int) * (size_t) n), outcount, done = 0;
        while (done < n) {
            T_CHECK_MPI(MPI_Testsome(n, reqs, &outcount, idx, MPI_STATUSES_IGNORE));
            if (MPI_UNDEFINED == outcount) {
                break;
            }
            done += outcount;
        }
        free(idx);
    }
}

static int round_trip(int round)
{
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    /* Both neighbours may be the same rank (2 ranks): tags keep the directions apart. */
    int nreq = 4 * WINDOW, errors = 0;
    MPI_Request *reqs = malloc(sizeof(*reqs) * (size_t) nreq);
    uint8_t *bufs[4 * WINDOW];
    int r = 0;

    for (int i = 0; i < WINDOW; ++i) {
        size_t len = size_of(round, i);
        bufs[r] = malloc(len + 1);
        T_CHECK_MPI(MPI_Irecv(bufs[r], (int) len, MPI_BYTE, left, 2 * i, MPI_COMM_WORLD, &reqs[r]));
        r++;
        bufs[r] = malloc(len + 1);
        T_CHECK_MPI(MPI_Irecv(bufs[r], (int) len, MPI_BYTE, right, 2 * i + 1, MPI_COMM_WORLD,
                              &reqs[r]));
        r++;
    }
    for (int i = 0; i < WINDOW; ++i) {
        size_t len = size_of(round, i);
        bufs[r] = malloc(len + 1);
        t_fill(bufs[r], len, t_rank, 2 * i + round * 1000);
        T_CHECK_MPI(MPI_Isend(bufs[r], (int) len, MPI_BYTE, right, 2 * i, MPI_COMM_WORLD, &reqs[r]));
        r++;
        bufs[r] = malloc(len + 1);
        t_fill(bufs[r], len, t_rank, 2 * i + 1 + round * 1000);
        T_CHECK_MPI(MPI_Isend(bufs[r], (int) len, MPI_BYTE, left, 2 * i + 1, MPI_COMM_WORLD,
                              &reqs[r]));
        r++;
    }
    complete(nreq, reqs, round % 3);
    for (int i = 0; i < WINDOW; ++i) {
        size_t len = size_of(round, i);
        char what[96];
        snprintf(what, sizeof(what), "window round %d, message %d from the left", round, i);
        errors += t_check(bufs[2 * i], len, left, 2 * i + round * 1000, what);
        snprintf(what, sizeof(what), "window round %d, message %d from the right", round, i);
        errors += t_check(bufs[2 * i + 1], len, right, 2 * i + 1 + round * 1000, what);
    }
    for (int i = 0; i < nreq; ++i) {
        free(bufs[i]);
    }
    free(reqs);
    return errors;
}

int main(int argc, char **argv)
{
    int errors = 0;
    t_init(&argc, &argv, "window");
    int rounds = t_quick ? 3 : 9;
    for (int round = 0; round < rounds; ++round) {
        errors += round_trip(round);
    }
    return t_finish(errors);
}
