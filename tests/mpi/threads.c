/*
 * MPI_THREAD_MULTIPLE: several threads of every rank exchange messages with the partner
 * rank at the same time, each thread on its own tag, sizes across the eager, rendezvous
 * and single-copy boundaries, both directions, unaligned buffers. Every byte is checked,
 * the send buffers must come back unchanged and the guard bytes around both buffers
 * poisoned; a lost, misrouted or interleaved message fails the test (or hangs it:
 * run-suite's timeout makes that a failure too).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define GUARD 64

static const size_t thread_sizes[] = {0, 1, 255, 4095, 4097, 33000, 65537, 1 * T_MiB + 3};
#define NTSIZES ((int) (sizeof(thread_sizes) / sizeof(thread_sizes[0])))

struct worker {
    pthread_t thread;
    int id, partner, rounds, errors;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;

    for (int round = 0; round < w->rounds; ++round) {
        for (int k = 0; k < NTSIZES; ++k) {
            /* each thread walks the sizes from a different start: mixed sizes in flight */
            size_t len = thread_sizes[(k + w->id) % NTSIZES];
            size_t mis = (size_t) (w->id + round) % 8;
            int msg = (round * NTSIZES + k) * NTHREADS + w->id;
            unsigned char *out = t_alloc(len, mis, GUARD), *in = t_alloc(len, 7 - mis, GUARD);
            MPI_Request reqs[2];
            char what[96];

            t_fill(out, len, t_rank, msg);
            T_CHECK_MPI(MPI_Irecv(in, (int) len, MPI_BYTE, w->partner, w->id, MPI_COMM_WORLD,
                                  &reqs[0]));
            T_CHECK_MPI(MPI_Isend(out, (int) len, MPI_BYTE, w->partner, w->id, MPI_COMM_WORLD,
                                  &reqs[1]));
            T_CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
            snprintf(what, sizeof(what), "thread %d, %zu bytes from rank %d", w->id, len,
                     w->partner);
            w->errors += t_check(in, len, w->partner, msg, what);
            w->errors += t_check_guards(in, len, GUARD, what);
            /* the send buffer and its guards must come back unchanged too */
            w->errors += t_check(out, len, t_rank, msg, "send buffer after the send");
            w->errors += t_check_guards(out, len, GUARD, "send buffer");
            t_free(out, mis, GUARD);
            t_free(in, 7 - mis, GUARD);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct worker workers[NTHREADS];
    int errors = 0;

    t_init_thread(&argc, &argv, "threads", MPI_THREAD_MULTIPLE);
    /* pairs (0,1), (2,3), ...; an odd last rank pairs with rank 0's partner-less twin */
    int partner = t_rank ^ 1;
    if (partner >= t_size) {
        partner = -1; /* the odd one out only joins the verdict */
    }
    for (int i = 0; i < NTHREADS && partner >= 0; ++i) {
        workers[i] = (struct worker){.id = i, .partner = partner, .rounds = t_quick ? 2 : 6};
        if (0 != pthread_create(&workers[i].thread, NULL, worker_main, &workers[i])) {
            fprintf(stderr, "threads: rank %d cannot start a thread\n", t_rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    for (int i = 0; i < NTHREADS && partner >= 0; ++i) {
        pthread_join(workers[i].thread, NULL);
        errors += workers[i].errors;
    }
    return t_finish(errors);
}
