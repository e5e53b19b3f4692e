/*
 * The soak's workload: a sequence of rounds drawn from one seed (every rank draws the
 * same sequence), each a data-checked piece of traffic that has hung or corrupted a
 * shared-memory transport before:
 *   alltoall    MPI_Alltoall of contiguous, vector or struct blocks of 1 B to 256 KiB
 *   alltoallv   MPI_Alltoallv of the same types, uneven counts (some empty) per pair
 *   burst       many nonblocking sends to peers that post nothing until a barrier has
 *               passed (unexpected messages, eager and rendezvous), received in a
 *               shuffled order
 *   anysource   every rank sends to one root, which receives with MPI_ANY_SOURCE into
 *               misaligned buffers and tells the senders apart by their status
 *   threads     several threads per rank (MPI_THREAD_MULTIPLE), each exchanging
 *               messages of drawn sizes with its neighbours on a communicator of its own
 * Every byte received is checked against the pattern of (sender, message, offset), the
 * holes of derived types and the guards around every buffer must stay untouched.
 *
 *   soak SEED ROUNDS(1-200) THREADS [KINDS]
 *
 * THREADS > 1 asks for MPI_THREAD_MULTIPLE and adds the threads round. KINDS, a comma-
 * separated list of round names, keeps the draw to those (default: all). Output (rank 0):
 * "soak: PASS ..." or "soak: FAIL ..." with the first bad byte of each rank on stderr.
 * Used by tests/soak/run-soak, which draws the seed and the transport's parameters.
 * SMX_SOAK_STALL=1 makes rank 0 stop for good in round 1 (how the soak's watchdog is
 * shown to catch a hang); SMX_TEST_INJECT_FAULT=1 corrupts one received byte.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "../mpi/common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SOAK_BLOCK_MAX (256 * 1024)
#define SOAK_GUARD 16
#define SOAK_MAX_THREADS 8

/* splitmix64: every rank that starts from the same state draws the same numbers. */
static uint64_t soak_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t soak_below(uint64_t *state, size_t n)
{
    return 0 == n ? 0 : (size_t) (soak_next(state) % n);
}

/* Sizes from 1 byte to 'most', spread evenly over the powers of two, each nudged off
 * them (odd sizes and sizes next to every threshold). */
static size_t soak_size(uint64_t *state, size_t most)
{
    int bits = 0;
    size_t size;

    while (((size_t) 2 << bits) <= most) {
        bits++;
    }
    size = (size_t) 1 << soak_below(state, (size_t) bits + 1);
    switch (soak_below(state, 4)) {
    case 0: size -= size > 1; break;
    case 1: size += 1 + soak_below(state, size); break;
    case 2: size += soak_below(state, 64); break;
    default: break;
    }
    return size > most ? most : size;
}

/* A datatype with its layout written out by hand (struct t_shape: the reference). */
struct soak_type {
    MPI_Datatype type;
    struct t_shape one; /* one element: reps 1 */
    const char *name;
};

/* Contiguous bytes, a vector of blocks with gaps, or a struct of ints, doubles and chars
 * with holes, resized so that consecutive elements leave a hole too. */
static void soak_type_draw(uint64_t *state, struct soak_type *t)
{
    memset(&t->one, 0, sizeof(t->one));
    t->one.reps = 1;
    switch (soak_below(state, 3)) {
    case 0:
        t->type = MPI_BYTE;
        t->one.extent = 1;
        t->one.nblocks = 1;
        t->one.len[0] = 1;
        t->name = "contiguous";
        return;
    case 1: {
        int count = 1 + (int) soak_below(state, T_SHAPE_MAXBLOCKS);
        int blen = 1 + (int) soak_below(state, 96);
        int stride = blen + 1 + (int) soak_below(state, 40);
        MPI_Datatype vec;

        T_CHECK_MPI(MPI_Type_vector(count, blen, stride, MPI_BYTE, &vec));
        t->one.extent = (size_t) ((count - 1) * stride + blen + 3);
        T_CHECK_MPI(MPI_Type_create_resized(vec, 0, (MPI_Aint) t->one.extent, &t->type));
        T_CHECK_MPI(MPI_Type_free(&vec));
        t->one.nblocks = count;
        for (int b = 0; b < count; ++b) {
            t->one.off[b] = (size_t) (b * stride);
            t->one.len[b] = (size_t) blen;
        }
        t->name = "vector";
        break;
    }
    default: {
        int nint = 1 + (int) soak_below(state, 5), ndouble = 1 + (int) soak_below(state, 4);
        int nchar = 1 + (int) soak_below(state, 13);
        int lens[3] = {nint, ndouble, nchar};
        MPI_Aint disps[3];
        MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, st;

        disps[0] = 4; /* a hole before the first block */
        disps[1] = ((disps[0] + nint * 4 + 7) & ~7) + 8;
        disps[2] = disps[1] + ndouble * 8 + 5;
        T_CHECK_MPI(MPI_Type_create_struct(3, lens, disps, types, &st));
        t->one.extent = (size_t) (disps[2] + nchar + 11);
        T_CHECK_MPI(MPI_Type_create_resized(st, 0, (MPI_Aint) t->one.extent, &t->type));
        T_CHECK_MPI(MPI_Type_free(&st));
        t->one.nblocks = 3;
        for (int b = 0; b < 3; ++b) {
            t->one.off[b] = (size_t) disps[b];
        }
        t->one.len[0] = (size_t) nint * 4;
        t->one.len[1] = (size_t) ndouble * 8;
        t->one.len[2] = (size_t) nchar;
        t->name = "struct";
        break;
    }
    }
    T_CHECK_MPI(MPI_Type_commit(&t->type));
}

static void soak_type_free(struct soak_type *t)
{
    if (MPI_BYTE != t->type) {
        MPI_Type_free(&t->type);
    }
}

/* The layout of 'count' elements. */
static struct t_shape soak_shape(const struct soak_type *t, size_t count)
{
    struct t_shape s = t->one;
    s.reps = count;
    return s;
}

/* Elements of the type that span about 'bytes' bytes of memory (at least one): a sparse
 * type carries less data than it spans, and the buffers grow with the span. */
static size_t soak_count_for(const struct soak_type *t, size_t bytes)
{
    size_t count = bytes / t->one.extent;
    return 0 == count ? 1 : count;
}

/* Fill span bytes at typed (already poisoned) with sender's message msg in the layout. */
static void soak_fill_typed(const struct t_shape *s, uint8_t *typed, int sender, int msg)
{
    size_t bytes = t_shape_bytes(s);
    uint8_t *packed = malloc(bytes + 1);

    t_fill(packed, bytes, sender, msg);
    t_shape_scatter(s, typed, packed);
    free(packed);
}

/* Compare what arrived in the layout with what sender's message msg must give; the hole
 * after the last element's last block (up to reps x extent) must be untouched too. */
static int soak_check_typed(const struct t_shape *s, const uint8_t *typed, int sender, int msg,
                            const char *what)
{
    size_t bytes = t_shape_bytes(s), span = t_shape_span(s), whole = s->reps * s->extent;
    uint8_t *want = malloc(span + 1), *scratch = malloc(bytes + 1);
    int errors;

    t_shape_expect(s, want, scratch, sender, msg);
    errors = t_check_equal(typed, want, span, what);
    if (whole > span) {
        errors += t_check_poison(typed + span, whole - span, what);
    }
    free(want);
    free(scratch);
    return errors;
}

/* Point-to-point tags of a round: a rank done with a round may already be sending the
 * next one's messages, and a receive of this round must not match them (MPI_ANY_SOURCE
 * would). 128 per round, below the 32767 that MPI_TAG_UB is at least. */
static int soak_tag(int round, int index)
{
    return round * 128 + index; /* round < 200 (main) */
}

/* Message id of the block 'src' sends to 'dst' in round 'round' (so that blocks of
 * different rounds and pairs never look alike). */
static int soak_msg(int round, int src, int dst)
{
    return (round * 4099 + src * 64 + dst) & 0x3fffffff;
}

/* MPI_Alltoall, or MPI_Alltoallv with a drawn count per pair (the same draw on every
 * rank, so senders and receivers agree). */
static int soak_alltoall(uint64_t *state, int round, int vector_counts)
{
    struct soak_type t;
    int n = t_size, errors = 0;
    size_t misalign = soak_below(state, 64);
    size_t *counts = malloc(sizeof(size_t) * (size_t) n * (size_t) n); /* [src * n + dst] */
    int *scounts = malloc(sizeof(int) * (size_t) n), *rcounts = malloc(sizeof(int) * (size_t) n);
    int *sdispls = malloc(sizeof(int) * (size_t) n), *rdispls = malloc(sizeof(int) * (size_t) n);
    size_t stotal = 0, rtotal = 0;
    char what[160];

    soak_type_draw(state, &t);
    size_t common = soak_count_for(&t, soak_size(state, SOAK_BLOCK_MAX));
    for (int i = 0; i < n * n; ++i) {
        counts[i] = common;
        if (vector_counts) {
            size_t bytes = soak_below(state, 5) ? soak_size(state, SOAK_BLOCK_MAX) : 0;
            counts[i] = 0 == bytes ? 0 : soak_count_for(&t, bytes);
        }
    }
    for (int p = 0; p < n; ++p) {
        scounts[p] = (int) counts[t_rank * n + p];
        rcounts[p] = (int) counts[p * n + t_rank];
        sdispls[p] = (int) stotal;
        rdispls[p] = (int) rtotal;
        stotal += counts[t_rank * n + p];
        rtotal += counts[p * n + t_rank];
    }
    /* a hole between consecutive blocks is the type's own (resized extent) */
    size_t sspan = stotal * t.one.extent, rspan = rtotal * t.one.extent;
    uint8_t *sbuf = t_alloc(sspan, misalign, SOAK_GUARD);
    uint8_t *rbuf = t_alloc(rspan, (misalign * 7 + 3) % 64, SOAK_GUARD);

    for (int p = 0; p < n; ++p) {
        struct t_shape s = soak_shape(&t, (size_t) scounts[p]);
        soak_fill_typed(&s, sbuf + (size_t) sdispls[p] * t.one.extent, t_rank,
                        soak_msg(round, t_rank, p));
    }
    if (vector_counts) {
        T_CHECK_MPI(MPI_Alltoallv(sbuf, scounts, sdispls, t.type, rbuf, rcounts, rdispls, t.type,
                                  MPI_COMM_WORLD));
    } else {
        T_CHECK_MPI(MPI_Alltoall(sbuf, (int) common, t.type, rbuf, (int) common, t.type,
                                 MPI_COMM_WORLD));
    }
    for (int p = 0; p < n; ++p) {
        struct t_shape s = soak_shape(&t, (size_t) rcounts[p]);
        snprintf(what, sizeof(what), "round %d: %s of %d %s elements (%zu bytes) from rank %d",
                 round, vector_counts ? "alltoallv" : "alltoall", rcounts[p], t.name,
                 t_shape_bytes(&s), p);
        errors += soak_check_typed(&s, rbuf + (size_t) rdispls[p] * t.one.extent, p,
                                   soak_msg(round, p, t_rank), what);
    }
    snprintf(what, sizeof(what), "round %d: alltoall send buffer", round);
    errors += t_check_guards(sbuf, sspan, SOAK_GUARD, what);
    snprintf(what, sizeof(what), "round %d: alltoall receive buffer", round);
    errors += t_check_guards(rbuf, rspan, SOAK_GUARD, what);
    t_free(sbuf, misalign, SOAK_GUARD);
    t_free(rbuf, (misalign * 7 + 3) % 64, SOAK_GUARD);
    soak_type_free(&t);
    free(counts);
    free(scounts);
    free(rcounts);
    free(sdispls);
    free(rdispls);
    return errors;
}

/* Each rank sends 'per_peer' messages to every peer of a drawn subset before any of them
 * posts a receive; after a barrier the receivers post theirs in a shuffled order. */
static int soak_burst(uint64_t *state, int round)
{
    int n = t_size, errors = 0;
    size_t most = soak_below(state, 2) ? 4096 : SOAK_BLOCK_MAX;
    int per_peer = 1 + (int) soak_below(state, 4096 == most ? 64 : 8);
    int *talks = malloc(sizeof(int) * (size_t) n * (size_t) n); /* [src * n + dst] */
    size_t *sizes = malloc(sizeof(size_t) * (size_t) n * (size_t) n * (size_t) per_peer);
    int nsend = 0, nrecv = 0;

    for (int i = 0; i < n * n; ++i) {
        talks[i] = (i / n != i % n) && soak_below(state, 3);
        for (int m = 0; m < per_peer; ++m) {
            sizes[(size_t) i * (size_t) per_peer + (size_t) m] = soak_size(state, most);
        }
    }
    for (int p = 0; p < n; ++p) {
        nsend += talks[t_rank * n + p] * per_peer;
        nrecv += talks[p * n + t_rank] * per_peer;
    }
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t) (nsend + nrecv + 1));
    uint8_t **bufs = calloc((size_t) (nsend + nrecv + 1), sizeof(uint8_t *));
    size_t *lens = malloc(sizeof(size_t) * (size_t) (nsend + nrecv + 1));
    size_t *mis = malloc(sizeof(size_t) * (size_t) (nsend + nrecv + 1));
    int *from = malloc(sizeof(int) * (size_t) (nrecv + 1)), *ids = malloc(sizeof(int) * (size_t) (nrecv + 1));
    int k = 0;

    for (int p = 0; p < n; ++p) {
        for (int m = 0; talks[t_rank * n + p] && m < per_peer; ++m, ++k) {
            lens[k] = sizes[(size_t) (t_rank * n + p) * (size_t) per_peer + (size_t) m];
            mis[k] = (size_t) (m % 64);
            bufs[k] = t_alloc(lens[k], mis[k], SOAK_GUARD);
            t_fill(bufs[k], lens[k], t_rank, soak_msg(round, t_rank, p) + m);
            T_CHECK_MPI(MPI_Isend(bufs[k], (int) lens[k], MPI_BYTE, p, soak_tag(round, m),
                                  MPI_COMM_WORLD, &reqs[k]));
        }
    }
    T_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* every send is unexpected or in flight */
    /* receives in a shuffled order: tags keep each one matched to its message */
    int r = 0;
    for (int p = 0; p < n; ++p) {
        for (int m = 0; talks[p * n + t_rank] && m < per_peer; ++m, ++r) {
            from[r] = p;
            ids[r] = m;
        }
    }
    /* (a state of this rank's own: ranks receive different numbers of messages, and the
     * shared state must stay the same on every rank) */
    uint64_t mine = soak_next(state) + (uint64_t) t_rank;
    for (int i = nrecv - 1; i > 0; --i) {
        int j = (int) soak_below(&mine, (size_t) i + 1), tf = from[i], ti = ids[i];
        from[i] = from[j], ids[i] = ids[j], from[j] = tf, ids[j] = ti;
    }
    for (int i = 0; i < nrecv; ++i, ++k) {
        lens[k] = sizes[(size_t) (from[i] * n + t_rank) * (size_t) per_peer + (size_t) ids[i]];
        mis[k] = (size_t) ((i * 13) % 64);
        bufs[k] = t_alloc(lens[k], mis[k], SOAK_GUARD);
        T_CHECK_MPI(MPI_Irecv(bufs[k], (int) lens[k], MPI_BYTE, from[i], soak_tag(round, ids[i]),
                              MPI_COMM_WORLD, &reqs[k]));
    }
    T_CHECK_MPI(MPI_Waitall(k, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < nrecv; ++i) {
        char what[128];
        int q = nsend + i;
        snprintf(what, sizeof(what), "round %d: burst message %d of %zu bytes from rank %d",
                 round, ids[i], lens[q], from[i]);
        errors += t_check(bufs[q], lens[q], from[i], soak_msg(round, from[i], t_rank) + ids[i],
                          what);
        errors += t_check_guards(bufs[q], lens[q], SOAK_GUARD, what);
    }
    for (int i = 0; i < k; ++i) {
        t_free(bufs[i], mis[i], SOAK_GUARD);
    }
    free(mis);
    free(talks);
    free(sizes);
    free(reqs);
    free(bufs);
    free(lens);
    free(from);
    free(ids);
    return errors;
}

/* Every other rank sends 'per_sender' messages (tag = index) to a drawn root, which
 * receives each index from MPI_ANY_SOURCE: the status names the sender, every sender must
 * appear once per index, and MPI_Get_count must give the size that sender drew. */
static int soak_anysource(uint64_t *state, int round)
{
    int n = t_size, errors = 0, root = (int) soak_below(state, (size_t) n);
    int per_sender = 1 + (int) soak_below(state, 16);
    int tag0 = soak_tag(round, 0);
    size_t most = soak_below(state, 2) ? 2048 : SOAK_BLOCK_MAX;
    size_t *sizes = malloc(sizeof(size_t) * (size_t) n * (size_t) per_sender);
    char what[128];

    for (int i = 0; i < n * per_sender; ++i) {
        sizes[i] = soak_size(state, most);
    }
    if (t_rank != root) {
        MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t) per_sender);
        uint8_t **bufs = malloc(sizeof(uint8_t *) * (size_t) per_sender);
        for (int m = 0; m < per_sender; ++m) {
            size_t len = sizes[t_rank * per_sender + m];
            bufs[m] = t_alloc(len, (size_t) (t_rank + m) % 64, SOAK_GUARD);
            t_fill(bufs[m], len, t_rank, soak_msg(round, t_rank, root) + m);
            T_CHECK_MPI(MPI_Isend(bufs[m], (int) len, MPI_BYTE, root, tag0 + m, MPI_COMM_WORLD,
                                  &reqs[m]));
        }
        T_CHECK_MPI(MPI_Waitall(per_sender, reqs, MPI_STATUSES_IGNORE));
        for (int m = 0; m < per_sender; ++m) {
            t_free(bufs[m], (size_t) (t_rank + m) % 64, SOAK_GUARD);
        }
        free(reqs);
        free(bufs);
        free(sizes);
        return 0;
    }
    uint8_t *buf = t_alloc(most, 5, SOAK_GUARD);
    int *seen = calloc((size_t) n, sizeof(int));
    for (int m = 0; m < per_sender; ++m) {
        for (int s = 0; s < n - 1; ++s) {
            MPI_Status st;
            int count = -1, src;

            memset(buf, T_POISON, most);
            T_CHECK_MPI(MPI_Recv(buf, (int) most, MPI_BYTE, MPI_ANY_SOURCE, tag0 + m,
                                 MPI_COMM_WORLD, &st));
            src = st.MPI_SOURCE;
            MPI_Get_count(&st, MPI_BYTE, &count);
            snprintf(what, sizeof(what), "round %d: ANY_SOURCE message %d from rank %d", round, m,
                     src);
            if (src < 0 || src >= n || src == root || seen[src] != m || st.MPI_TAG != tag0 + m
                || count < 0 || (size_t) count != sizes[src * per_sender + m]) {
                fprintf(stderr, "soak: rank %d: %s: source %d, tag %d, %d bytes: not a message "
                        "that was due (expected tag %d, %zu bytes)\n", t_rank, what, src,
                        st.MPI_TAG, count, tag0 + m,
                        src >= 0 && src < n ? sizes[src * per_sender + m] : (size_t) 0);
                errors++;
                continue;
            }
            seen[src]++;
            errors += t_check(buf, (size_t) count, src, soak_msg(round, src, root) + m, what);
            errors += t_check_poison(buf + count, most - (size_t) count, what);
        }
    }
    errors += t_check_guards(buf, most, SOAK_GUARD, "ANY_SOURCE receive buffer");
    t_free(buf, 5, SOAK_GUARD);
    free(seen);
    free(sizes);
    return errors;
}

/* One thread of the threads round: on its own communicator, 'iters' exchanges with the
 * right neighbour (send) and the left one (receive), sizes drawn per thread. */
struct soak_thread {
    MPI_Comm comm;
    uint64_t state;
    int round, id, iters, errors;
};

static void *soak_thread_main(void *arg)
{
    struct soak_thread *th = arg;
    int n = t_size, right = (t_rank + 1) % n, left = (t_rank + n - 1) % n;
    char what[128];

    for (int it = 0; it < th->iters; ++it) {
        /* each rank draws its own size and its left neighbour's from the shared state */
        uint64_t state = th->state + (uint64_t) it * 0x1000193u;
        size_t sizes[64];
        for (int p = 0; p < n && p < 64; ++p) {
            sizes[p] = soak_size(&state, SOAK_BLOCK_MAX / 4);
        }
        size_t slen = sizes[t_rank % 64], rlen = sizes[left % 64];
        int msg = soak_msg(th->round, t_rank, right) + th->id * 131 + it;
        uint8_t *sbuf = t_alloc(slen, (size_t) th->id, SOAK_GUARD);
        uint8_t *rbuf = t_alloc(rlen, (size_t) (th->id + it) % 64, SOAK_GUARD);
        MPI_Status st;
        int count = -1;

        t_fill(sbuf, slen, t_rank, msg);
        if (MPI_SUCCESS != MPI_Sendrecv(sbuf, (int) slen, MPI_BYTE, right, it, rbuf, (int) rlen,
                                        MPI_BYTE, left, it, th->comm, &st)) {
            th->errors++;
        } else {
            MPI_Get_count(&st, MPI_BYTE, &count);
            snprintf(what, sizeof(what), "round %d: thread %d exchange %d, %zu bytes from rank %d",
                     th->round, th->id, it, rlen, left);
            if (count < 0 || (size_t) count != rlen) {
                fprintf(stderr, "soak: rank %d: %s: %d bytes arrived\n", t_rank, what, count);
                th->errors++;
            }
            th->errors += t_check(rbuf, rlen, left,
                                  soak_msg(th->round, left, t_rank) + th->id * 131 + it, what);
            th->errors += t_check_guards(rbuf, rlen, SOAK_GUARD, what);
        }
        t_free(sbuf, (size_t) th->id, SOAK_GUARD);
        t_free(rbuf, (size_t) (th->id + it) % 64, SOAK_GUARD);
    }
    return NULL;
}

static int soak_threads(uint64_t *state, int round, MPI_Comm *comms, int threads)
{
    struct soak_thread th[SOAK_MAX_THREADS];
    pthread_t tid[SOAK_MAX_THREADS];
    int errors = 0, iters = 1 + (int) soak_below(state, 24);

    for (int i = 0; i < threads; ++i) {
        th[i] = (struct soak_thread){.comm = comms[i],
                                     .state = soak_next(state),
                                     .round = round,
                                     .id = i,
                                     .iters = iters};
        if (0 != pthread_create(&tid[i], NULL, soak_thread_main, &th[i])) {
            fprintf(stderr, "soak: rank %d: cannot start thread %d\n", t_rank, i);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    for (int i = 0; i < threads; ++i) {
        pthread_join(tid[i], NULL);
        errors += th[i].errors;
    }
    return errors;
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"alltoall", "alltoallv", "burst", "anysource", "threads"};
    MPI_Comm comms[SOAK_MAX_THREADS];
    uint64_t seed, state;
    int rounds, threads, errors = 0, done[5] = {0};

    int allowed[5], nallowed = 0;

    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: soak SEED ROUNDS THREADS (1 to %d) [KINDS]\n", SOAK_MAX_THREADS);
        return 2;
    }
    seed = strtoull(argv[1], NULL, 0);
    rounds = atoi(argv[2]);
    threads = atoi(argv[3]);
    /* (at most 200 rounds: each has its own range of tags, soak_tag) */
    if (rounds < 1 || rounds > 200 || threads < 1 || threads > SOAK_MAX_THREADS) {
        fprintf(stderr, "soak: ROUNDS must be 1 to 200 and THREADS 1 to %d\n", SOAK_MAX_THREADS);
        return 2;
    }
    for (int k = 0; k < 5; ++k) {
        char list[256];
        snprintf(list, sizeof(list), ",%s,", 5 == argc ? argv[4] : "alltoall,alltoallv,burst,"
                                                                  "anysource,threads");
        char want[32];
        snprintf(want, sizeof(want), ",%s,", names[k]);
        if (NULL != strstr(list, want) && (4 != k || threads > 1)) {
            allowed[nallowed++] = k;
        }
    }
    if (0 == nallowed) {
        fprintf(stderr, "soak: no round to draw from '%s' (threads needs THREADS > 1)\n",
                5 == argc ? argv[4] : "");
        return 2;
    }
    t_init_thread(&argc, &argv, "soak", threads > 1 ? MPI_THREAD_MULTIPLE : -1);
    for (int i = 0; i < threads && threads > 1; ++i) {
        T_CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]));
    }
    state = seed;
    const char *stall = getenv("SMX_SOAK_STALL");
    for (int round = 0; round < rounds; ++round) {
        if (1 == round && 0 == t_rank && NULL != stall && atoi(stall) > 0) {
            for (;;) {
                pause();
            }
        }
        int kind = allowed[soak_below(&state, (size_t) nallowed)];
        switch (kind) {
        case 0: errors += soak_alltoall(&state, round, 0); break;
        case 1: errors += soak_alltoall(&state, round, 1); break;
        case 2: errors += soak_burst(&state, round); break;
        case 3: errors += soak_anysource(&state, round); break;
        default: errors += soak_threads(&state, round, comms, threads); break;
        }
        done[kind]++;
    }
    for (int i = 0; i < threads && threads > 1; ++i) {
        MPI_Comm_free(&comms[i]);
    }
    if (0 == t_rank) {
        printf("soak: seed %llu, %d rounds:", (unsigned long long) seed, rounds);
        for (int k = 0; k < 5; ++k) {
            printf(" %s %d%s", names[k], done[k], 4 == k ? "\n" : ",");
        }
        fflush(stdout);
    }
    return t_finish(errors);
}
