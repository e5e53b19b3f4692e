/*
 * MPI_THREAD_MULTIPLE: several threads of every rank exchange messages with the partner
 * rank at the same time, each thread on its own tag, sizes across the eager, rendezvous
 * and single-copy boundaries, both directions, unaligned buffers. Every byte is checked,
 * the send buffers must come back unchanged and the guard bytes around both buffers
 * poisoned; a lost, misrouted or interleaved message fails the test (or hangs it:
 * run-suite's timeout makes that a failure too).
 *
 * Then the threads probe (the same sizes): each thread, on its own tag, receives
 * messages sent with MPI_Ssend by MPI_Probe, MPI_Get_count (which must give the size
 * sent) and MPI_Recv; and all the threads of a rank, on one tag, take whichever message
 * comes with MPI_Mprobe and MPI_Mrecv, its size telling which it is. (Not MPI_Probe and
 * MPI_Recv on a tag threads share: another thread may receive the message probed, and
 * ob1 can then report a size of 2^64 - 14 for it, whatever the transport: docs/using-smx.md,
 * "Probing from several threads".)
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <pthread.h>
#include <stdbool.h>
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

#define PROBE_TAG 100    /* + the thread's id: its own tag */
#define SHARED_TAG 200   /* every thread's */
#define SHARED_STEP 8    /* thread t's messages on SHARED_TAG are t * SHARED_STEP bytes longer */

/* Message k of thread t on SHARED_TAG: its size, and its number; a size names (t, k)
 * (sizes closer than 4 * SHARED_STEP, 0 and 1, 4095 and 4097, differ mod SHARED_STEP). */
static size_t shared_len(int t, int k)
{
    return thread_sizes[k] + (size_t) t * SHARED_STEP;
}

static int shared_msg(int t, int k)
{
    return 1000 + k * NTHREADS + t;
}

/* The probing phase of one thread (the file's comment). The even rank sends first. */
static void probe_phase(struct worker *w)
{
    const bool sender_first = 0 == t_rank % 2;
    char what[128];

    for (int half = 0; half < 2; ++half) {
        const bool sending = sender_first == (0 == half);
        for (int k = 0; k < NTSIZES; ++k) {
            const size_t len = thread_sizes[(k + w->id) % NTSIZES];
            const int msg = 500 + k * NTHREADS + w->id;
            if (sending) {
                unsigned char *out = t_alloc(len, (size_t) k % 8, GUARD);
                t_fill(out, len, t_rank, msg);
                T_CHECK_MPI(MPI_Ssend(out, (int) len, MPI_BYTE, w->partner, PROBE_TAG + w->id,
                                      MPI_COMM_WORLD));
                t_free(out, (size_t) k % 8, GUARD);
                continue;
            }
            MPI_Status st;
            int count = -1;
            T_CHECK_MPI(MPI_Probe(w->partner, PROBE_TAG + w->id, MPI_COMM_WORLD, &st));
            T_CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            if ((size_t) count != len || st.MPI_SOURCE != w->partner
                || st.MPI_TAG != PROBE_TAG + w->id) {
                fprintf(stderr, "threads: rank %d thread %d: MPI_Probe of a %zu-byte message "
                                "from rank %d: count %d, source %d, tag %d\n",
                        t_rank, w->id, len, w->partner, count, st.MPI_SOURCE, st.MPI_TAG);
                w->errors++;
                count = (int) len;
            }
            unsigned char *in = t_alloc(len, 7 - (size_t) k % 8, GUARD);
            T_CHECK_MPI(MPI_Recv(in, count, MPI_BYTE, w->partner, PROBE_TAG + w->id,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            snprintf(what, sizeof(what), "thread %d, probed, %zu bytes from rank %d", w->id, len,
                     w->partner);
            w->errors += t_check(in, len, w->partner, msg, what);
            w->errors += t_check_guards(in, len, GUARD, what);
            t_free(in, 7 - (size_t) k % 8, GUARD);
        }
        for (int k = 0; k < NTSIZES; ++k) {
            if (sending) {
                const size_t len = shared_len(w->id, k);
                unsigned char *out = t_alloc(len, 0, GUARD);
                t_fill(out, len, t_rank, shared_msg(w->id, k));
                T_CHECK_MPI(MPI_Send(out, (int) len, MPI_BYTE, w->partner, SHARED_TAG,
                                     MPI_COMM_WORLD));
                t_free(out, 0, GUARD);
                continue;
            }
            MPI_Message m;
            MPI_Status st;
            int count = -1, t = 0, j = 0;
            T_CHECK_MPI(MPI_Mprobe(w->partner, SHARED_TAG, MPI_COMM_WORLD, &m, &st));
            T_CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            for (t = 0; t < NTHREADS; ++t) {
                for (j = 0; j < NTSIZES && (size_t) count != shared_len(t, j); ++j) {
                }
                if (j < NTSIZES) {
                    break;
                }
            }
            if (t == NTHREADS) {
                fprintf(stderr, "threads: rank %d thread %d: MPI_Mprobe of a message from rank "
                                "%d: count %d, the size of none sent\n",
                        t_rank, w->id, w->partner, count);
                w->errors++;
                T_CHECK_MPI(MPI_Mrecv(NULL, 0, MPI_BYTE, &m, MPI_STATUS_IGNORE));
                continue;
            }
            const size_t len = (size_t) count;
            unsigned char *in = t_alloc(len, 3, GUARD);
            T_CHECK_MPI(MPI_Mrecv(in, count, MPI_BYTE, &m, &st));
            snprintf(what, sizeof(what), "thread %d, matched probe, %zu bytes from rank %d",
                     w->id, len, w->partner);
            w->errors += t_check(in, len, w->partner, shared_msg(t, j), what);
            w->errors += t_check_guards(in, len, GUARD, what);
            t_free(in, 3, GUARD);
        }
    }
}

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
    probe_phase(w);
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
