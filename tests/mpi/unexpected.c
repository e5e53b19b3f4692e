/*
 * Unexpected messages: every rank but 0 starts a burst of sends of mixed sizes to rank 0
 * before rank 0 has posted anything (a barrier orders it), so the small ones wait in the
 * unexpected queue and the large ones as pending rendezvous. Rank 0 then drains them,
 * first per sender in reverse rank order, then with MPI_ANY_SOURCE; data, counts and
 * per-sender order are checked.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

static const size_t burst_sizes[] = {1, 8, 100, 1000, 4000, 8193, 40000, 70001, 1 * T_MiB + 1};
#define NBURST ((int) (sizeof(burst_sizes) / sizeof(burst_sizes[0])))
#define MAXLEN (1 * T_MiB + 1)

static size_t size_of(int i)
{
    return burst_sizes[i % NBURST];
}

static int receive_one(uint8_t *buf, int src, int i, int phase)
{
    MPI_Status st;
    int count;
    char what[96];
    int msg = phase * 1000 + i;

    T_CHECK_MPI(MPI_Recv(buf, MAXLEN, MPI_BYTE, src, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_BYTE, &count);
    if (st.MPI_TAG != msg || (size_t) count != size_of(i)) {
        fprintf(stderr, "unexpected: from rank %d got tag %d (%d bytes), expected tag %d (%zu bytes)\n",
                st.MPI_SOURCE, st.MPI_TAG, count, msg, size_of(i));
        return 1;
    }
    snprintf(what, sizeof(what), "unexpected message %d from rank %d", msg, st.MPI_SOURCE);
    return t_check(buf, (size_t) count, st.MPI_SOURCE, msg, what);
}

static int burst(int phase, int nmsg)
{
    int errors = 0;
    if (0 != t_rank) {
        uint8_t **bufs = calloc((size_t) nmsg, sizeof(*bufs));
        MPI_Request *reqs = calloc((size_t) nmsg, sizeof(*reqs));
        for (int i = 0; i < nmsg; ++i) {
            bufs[i] = malloc(size_of(i));
            t_fill(bufs[i], size_of(i), t_rank, phase * 1000 + i);
            T_CHECK_MPI(MPI_Isend(bufs[i], (int) size_of(i), MPI_BYTE, 0, phase * 1000 + i,
                                  MPI_COMM_WORLD, &reqs[i]));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        T_CHECK_MPI(MPI_Waitall(nmsg, reqs, MPI_STATUSES_IGNORE));
        for (int i = 0; i < nmsg; ++i) {
            free(bufs[i]);
        }
        free(bufs);
        free(reqs);
    } else {
        uint8_t *buf = malloc(MAXLEN);
        MPI_Barrier(MPI_COMM_WORLD); /* every burst is in flight before any receive */
        if (0 == phase) {
            for (int src = t_size - 1; src > 0; --src) {
                for (int i = 0; i < nmsg; ++i) {
                    errors += receive_one(buf, src, i, phase);
                }
            }
        } else {
            int *next = calloc((size_t) t_size, sizeof(int));
            for (int n = 0; n < nmsg * (t_size - 1); ++n) {
                MPI_Status st;
                T_CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                errors += receive_one(buf, st.MPI_SOURCE, next[st.MPI_SOURCE]++, phase);
            }
            free(next);
        }
        free(buf);
    }
    return errors;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "unexpected");
    int nmsg = t_quick ? 2 * NBURST : 6 * NBURST;
    int errors = burst(0, nmsg);
    errors += burst(1, nmsg);
    return t_finish(errors);
}
