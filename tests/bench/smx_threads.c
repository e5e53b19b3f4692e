/*
 * smx_threads: message rate with several threads per rank (MPI_THREAD_MULTIPLE): what a
 * transport's locks, and its progress under threads, cost.
 *
 *   mpirun -np P smx_threads [--threads T] [--sizes LIST] [--window W] [--samples N]
 *                            [--target-msgs M] [--peers ring|pairs]
 *                            [--send isend|issend|ssend]
 *
 * Peers. ring (the default): thread t (0 <= t < T, T < P) of rank r sends to rank
 * (r + 1 + t) % P and receives from rank (r - 1 - t) mod P, so that threads send to
 * different peers at once. pairs: every thread of rank r talks to rank r ^ 1 (P even, any
 * T), so that all the threads of a rank share one peer (MPICH's threads/pt2pt tests'
 * layout). Either way each thread has a communicator of its own (threads never match
 * each other's messages).
 *
 * Sends. isend (the default): windows of W nonblocking receives and W nonblocking sends,
 * then MPI_Waitall. issend: the same with MPI_Issend, each send complete only once its
 * receive has matched it (a rendezvous whatever the size). ssend (pairs only): blocking
 * synchronous sends, one message at a time, as MPICH's mt_ssendrecv does: in a window the
 * even rank of a pair sends W messages with MPI_Ssend while its partner receives them
 * with MPI_Recv, then the other way.
 *
 * A sample is one timed stretch of windows, ended by a barrier of the whole job; the
 * median sample is reported. Every message's first and last bytes carry a stamp (sender,
 * thread, window, index) that the receiver checks, so that a lost, truncated or
 * misdelivered message fails the run instead of giving a rate.
 *
 * Output (rank 0, stdout): '#' comment lines, then CSV
 * 'threads,bytes,windows,usec,msgs_per_s': the messages sent per second by the whole job
 * (P * T * W per window). Exit status 0, or 1 if a stamp was wrong (the rank says which).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "bench_util.h"

#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 32
#define MAX_THREADS 64
#define MAX_SAMPLES 101

enum send_kind { SEND_ISEND, SEND_ISSEND, SEND_SSEND };

struct options {
    int threads, window, samples;
    bool pairs;
    enum send_kind send;
    long target_msgs;
    size_t sizes[MAX_SIZES];
    int nsizes;
};

struct worker {
    pthread_t tid;
    int t, to, from, rank;
    bool first; /* ssend: this rank sends first in each window */
    MPI_Comm comm;
    const struct options *o;
    size_t size;
    int windows;
    unsigned char *send, *recv; /* window * size bytes each */
    MPI_Request *req;           /* 2 * window */
    pthread_barrier_t *start;
    int errors;
};

static void usage(int rank)
{
    if (0 == rank) {
        fprintf(stderr, "usage: mpirun -np P smx_threads [--threads T (< P; any with "
                        "--peers pairs)] [--sizes LIST] [--window W] [--samples N] "
                        "[--target-msgs M] [--peers ring|pairs] [--send isend|issend|ssend "
                        "(ssend: with --peers pairs)]\n");
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void parse(int argc, char **argv, int rank, int size, struct options *o)
{
    int threads = 0;

    o->threads = size - 1 < 3 ? size - 1 : 3;
    o->pairs = false;
    o->send = SEND_ISEND;
    o->window = 64;
    o->samples = 11;
    o->target_msgs = 200000;
    o->nsizes = bu_parse_size_list("8,1K,8K", o->sizes, MAX_SIZES);
    for (int i = 1; i < argc; i += 2) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        long v;

        if (NULL == val) {
            usage(rank);
        }
        if (0 == strcmp(opt, "--sizes")) {
            o->nsizes = bu_parse_size_list(val, o->sizes, MAX_SIZES);
            if (o->nsizes < 1) {
                usage(rank);
            }
            continue;
        }
        if (0 == strcmp(opt, "--peers")) {
            if (0 == strcmp(val, "pairs") || 0 == strcmp(val, "ring")) {
                o->pairs = 0 == strcmp(val, "pairs");
            } else {
                usage(rank);
            }
            continue;
        }
        if (0 == strcmp(opt, "--send")) {
            if (0 == strcmp(val, "isend")) {
                o->send = SEND_ISEND;
            } else if (0 == strcmp(val, "issend")) {
                o->send = SEND_ISSEND;
            } else if (0 == strcmp(val, "ssend")) {
                o->send = SEND_SSEND;
            } else {
                usage(rank);
            }
            continue;
        }
        v = strtol(val, &end, 10);
        if ('\0' == *val || '\0' != *end || v < 1) {
            usage(rank);
        }
        if (0 == strcmp(opt, "--threads") && v <= MAX_THREADS) {
            threads = (int) v;
        } else if (0 == strcmp(opt, "--window") && v <= 4096) {
            o->window = (int) v;
        } else if (0 == strcmp(opt, "--samples") && v <= MAX_SAMPLES) {
            o->samples = (int) v;
        } else if (0 == strcmp(opt, "--target-msgs")) {
            o->target_msgs = v;
        } else {
            usage(rank);
        }
    }
    if (o->pairs) {
        o->threads = threads > 0 ? threads : 3;
        if (0 != size % 2) {
            if (0 == rank) {
                fprintf(stderr, "smx_threads: --peers pairs needs an even number of ranks\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        return;
    }
    if (SEND_SSEND == o->send) {
        if (0 == rank) {
            fprintf(stderr, "smx_threads: --send ssend needs --peers pairs (blocking "
                            "synchronous sends around a ring wait for each other)\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (threads > 0) {
        o->threads = threads;
    }
    if (o->threads < 1 || o->threads >= size) {
        if (0 == rank) {
            fprintf(stderr, "smx_threads: %d threads need more than %d ranks (each thread "
                            "talks to a peer of its own)\n", o->threads, o->threads);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* The stamp of message i of window w from thread t of rank r: two bytes, first and last. */
static unsigned char stamp(int r, int t, int w, int i, int which)
{
    return (unsigned char) (r * 131 + t * 31 + w * 7 + i * 3 + which * 101 + 1);
}

/* Is message i of window w from thread t of rank 'from' the one received? */
static void check(struct worker *k, int w, int i, const unsigned char *m)
{
    const size_t s = k->size;

    if (s > 0 && (m[0] != stamp(k->from, k->t, w, i, 0)
                  || m[s - 1] != stamp(k->from, k->t, w, i, 1))) {
        if (0 == k->errors) {
            fprintf(stderr, "smx_threads: rank %d thread %d: message %d of window %d "
                            "from rank %d, %zu bytes: wrong stamp\n",
                    k->rank, k->t, i, w, k->from, s);
        }
        k->errors++;
    }
}

static unsigned char *stamped(struct worker *k, int w, int i)
{
    unsigned char *m = k->send + (size_t) i * k->size;

    if (k->size > 0) {
        m[0] = stamp(k->rank, k->t, w, i, 0);
        m[k->size - 1] = stamp(k->rank, k->t, w, i, 1);
    }
    return m;
}

static void *run(void *arg)
{
    struct worker *k = arg;
    const int W = k->o->window;
    const size_t s = k->size;

    pthread_barrier_wait(k->start);
    for (int w = 0; w < k->windows; ++w) {
        if (SEND_SSEND == k->o->send) { /* one at a time: W sends, W receives, or the reverse */
            for (int half = 0; half < 2; ++half) {
                for (int i = 0; i < W; ++i) {
                    if (k->first == (0 == half)) {
                        MPI_Ssend(stamped(k, w, i), (int) s, MPI_BYTE, k->to, i, k->comm);
                    } else {
                        MPI_Recv(k->recv + (size_t) i * s, (int) s, MPI_BYTE, k->from, i, k->comm,
                                 MPI_STATUS_IGNORE);
                        check(k, w, i, k->recv + (size_t) i * s);
                    }
                }
            }
            continue;
        }
        for (int i = 0; i < W; ++i) {
            MPI_Irecv(k->recv + (size_t) i * s, (int) s, MPI_BYTE, k->from, i, k->comm,
                      &k->req[i]);
        }
        for (int i = 0; i < W; ++i) {
            if (SEND_ISSEND == k->o->send) {
                MPI_Issend(stamped(k, w, i), (int) s, MPI_BYTE, k->to, i, k->comm,
                           &k->req[W + i]);
            } else {
                MPI_Isend(stamped(k, w, i), (int) s, MPI_BYTE, k->to, i, k->comm,
                          &k->req[W + i]);
            }
        }
        MPI_Waitall(2 * W, k->req, MPI_STATUSES_IGNORE);
        for (int i = 0; i < W; ++i) {
            check(k, w, i, k->recv + (size_t) i * s);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size, errors = 0;
    struct options o;
    struct worker *ks;
    pthread_barrier_t start;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) {
            fprintf(stderr, "smx_threads: the MPI library gives no MPI_THREAD_MULTIPLE\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    parse(argc, argv, rank, size, &o);
    ks = calloc((size_t) o.threads, sizeof(*ks));
    if (NULL == ks) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int t = 0; t < o.threads; ++t) {
        ks[t].t = t;
        ks[t].rank = rank;
        if (o.pairs) {
            ks[t].to = ks[t].from = rank ^ 1;
        } else {
            ks[t].to = (rank + 1 + t) % size;
            ks[t].from = ((rank - 1 - t) % size + size) % size;
        }
        ks[t].first = 0 == rank % 2;
        ks[t].o = &o;
        MPI_Comm_dup(MPI_COMM_WORLD, &ks[t].comm);
        ks[t].req = malloc(2 * (size_t) o.window * sizeof(MPI_Request));
        if (NULL == ks[t].req) {
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (0 == rank) {
        static const char *const sends[] = {"MPI_Isend", "MPI_Issend",
                                            "MPI_Ssend, one at a time"};
        printf("# smx_threads: %d ranks, %d threads each, %s, windows of %d messages each "
               "way (%s)\n"
               "threads,bytes,windows,usec,msgs_per_s\n",
               size, o.threads,
               o.pairs ? "each thread with the partner rank" : "each thread with a peer of its own",
               o.window, sends[o.send]);
    }
    for (int z = 0; z < o.nsizes && 0 == errors; ++z) {
        const size_t s = o.sizes[z];
        const long per_window = (long) size * o.threads * o.window;
        int windows = (int) (o.target_msgs / per_window);
        double took[MAX_SAMPLES];

        windows = windows < 4 ? 4 : windows;
        for (int t = 0; t < o.threads; ++t) {
            ks[t].size = s;
            ks[t].windows = windows;
            ks[t].send = malloc((size_t) o.window * (s ? s : 1));
            ks[t].recv = malloc((size_t) o.window * (s ? s : 1));
            if (NULL == ks[t].send || NULL == ks[t].recv) {
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            memset(ks[t].send, 0, (size_t) o.window * (s ? s : 1));
        }
        /* sample 0 warms up (connections, rings, free lists) and is not counted */
        for (int n = 0; n <= o.samples; ++n) {
            pthread_barrier_init(&start, NULL, (unsigned) o.threads + 1);
            for (int t = 0; t < o.threads; ++t) {
                ks[t].start = &start;
                if (0 != pthread_create(&ks[t].tid, NULL, run, &ks[t])) {
                    MPI_Abort(MPI_COMM_WORLD, 2);
                }
            }
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            pthread_barrier_wait(&start);
            for (int t = 0; t < o.threads; ++t) {
                pthread_join(ks[t].tid, NULL);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (n > 0) {
                took[n - 1] = MPI_Wtime() - t0;
            }
            pthread_barrier_destroy(&start);
        }
        for (int t = 0; t < o.threads; ++t) {
            errors += ks[t].errors;
            free(ks[t].send);
            free(ks[t].recv);
        }
        MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (0 == rank && 0 == errors) {
            const double med = bu_median(took, o.samples);
            printf("%d,%zu,%d,%.1f,%.0f\n", o.threads, s, windows, med * 1e6,
                   (double) per_window * windows / med);
            fflush(stdout);
        }
    }
    for (int t = 0; t < o.threads; ++t) {
        MPI_Comm_free(&ks[t].comm);
        free(ks[t].req);
    }
    free(ks);
    if (0 != errors && 0 == rank) {
        fprintf(stderr, "smx_threads: %d messages with a wrong stamp\n", errors);
    }
    MPI_Finalize();
    return 0 == errors ? 0 : 1;
}
