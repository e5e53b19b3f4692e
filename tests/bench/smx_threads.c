/*
 * smx_threads: message rate with several threads per rank (MPI_THREAD_MULTIPLE), each
 * thread talking to a different peer: what a transport's locks cost when threads send to
 * different peers at once.
 *
 *   mpirun -np P smx_threads [--threads T] [--sizes LIST] [--window W] [--samples N]
 *                            [--target-msgs M]
 *
 * Thread t (0 <= t < T, T < P) of rank r sends to rank (r + 1 + t) % P and receives from
 * rank (r - 1 - t) mod P, on a communicator of its own (so that threads never match each
 * other's messages): windows of W nonblocking receives and W nonblocking sends, then
 * MPI_Waitall. A sample is one timed stretch of windows, ended by a barrier of the whole
 * job; the median sample is reported. Every message's first and last bytes carry a stamp
 * (sender, thread, window, index) that the receiver checks, so that a lost, truncated or
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 32
#define MAX_THREADS 64
#define MAX_SAMPLES 101

struct options {
    int threads, window, samples;
    long target_msgs;
    size_t sizes[MAX_SIZES];
    int nsizes;
};

struct worker {
    pthread_t tid;
    int t, to, from, rank;
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
        fprintf(stderr, "usage: mpirun -np P smx_threads [--threads T (< P)] [--sizes LIST] "
                        "[--window W] [--samples N] [--target-msgs M]\n");
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void parse(int argc, char **argv, int rank, int size, struct options *o)
{
    o->threads = size - 1 < 3 ? size - 1 : 3;
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
        v = strtol(val, &end, 10);
        if ('\0' == *val || '\0' != *end || v < 1) {
            usage(rank);
        }
        if (0 == strcmp(opt, "--threads") && v <= MAX_THREADS) {
            o->threads = (int) v;
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

static void *run(void *arg)
{
    struct worker *k = arg;
    const int W = k->o->window;
    const size_t s = k->size;

    pthread_barrier_wait(k->start);
    for (int w = 0; w < k->windows; ++w) {
        for (int i = 0; i < W; ++i) {
            MPI_Irecv(k->recv + (size_t) i * s, (int) s, MPI_BYTE, k->from, i, k->comm,
                      &k->req[i]);
        }
        for (int i = 0; i < W; ++i) {
            unsigned char *m = k->send + (size_t) i * s;
            if (s > 0) {
                m[0] = stamp(k->rank, k->t, w, i, 0);
                m[s - 1] = stamp(k->rank, k->t, w, i, 1);
            }
            MPI_Isend(m, (int) s, MPI_BYTE, k->to, i, k->comm, &k->req[W + i]);
        }
        MPI_Waitall(2 * W, k->req, MPI_STATUSES_IGNORE);
        for (int i = 0; s > 0 && i < W; ++i) {
            const unsigned char *m = k->recv + (size_t) i * s;
            if (m[0] != stamp(k->from, k->t, w, i, 0) || m[s - 1] != stamp(k->from, k->t, w, i, 1)) {
                if (0 == k->errors) {
                    fprintf(stderr, "smx_threads: rank %d thread %d: message %d of window %d "
                                    "from rank %d, %zu bytes: wrong stamp\n",
                            k->rank, k->t, i, w, k->from, s);
                }
                k->errors++;
            }
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
        ks[t].to = (rank + 1 + t) % size;
        ks[t].from = ((rank - 1 - t) % size + size) % size;
        ks[t].o = &o;
        MPI_Comm_dup(MPI_COMM_WORLD, &ks[t].comm);
        ks[t].req = malloc(2 * (size_t) o.window * sizeof(MPI_Request));
        if (NULL == ks[t].req) {
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (0 == rank) {
        printf("# smx_threads: %d ranks, %d threads each, windows of %d messages each way\n"
               "threads,bytes,windows,usec,msgs_per_s\n", size, o.threads, o.window);
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
