/*
 * MPI_ANY_SOURCE and MPI_ANY_TAG: every rank but 0 sends a series of messages of mixed
 * sizes (small, eager-sized and rendezvous-sized) to rank 0, which receives them all with
 * wildcards. The status must name the true sender, tag and count; the data must be that
 * sender's; each sender's messages must arrive in the order sent (non-overtaking); the
 * bytes just past each message and the guards around both buffers must stay poisoned.
 * Then every sender sends vectors of ints (typed or contiguous) that rank 0 receives into
 * a strided datatype with MPI_ANY_SOURCE: the status and every byte of the typed buffer,
 * holes included, are checked against the layout written out by hand.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 64

static const size_t mixed_sizes[] = {0, 1, 17, 4096, 4097, 33000, 65537, 300001, 2 * T_MiB + 9};
#define NMIXED ((int) (sizeof(mixed_sizes) / sizeof(mixed_sizes[0])))

/* vector(n, 3, 5, MPI_INT): 444 bytes of data (eager), 36 KB and 480 KB */
static const int vec_reps[] = {37, 3001, 40000};
#define NVEC ((int) (sizeof(vec_reps) / sizeof(vec_reps[0])))
#define VEC_BLOCK 3
#define VEC_STRIDE 5
#define VEC_TAG 1000

static size_t size_of(int sender, int i)
{
    return mixed_sizes[(i + sender) % NMIXED];
}

static struct t_shape vec_shape(int k)
{
    return (struct t_shape){.reps = (size_t) vec_reps[k], .extent = VEC_STRIDE * sizeof(int),
                            .nblocks = 1, .off = {0}, .len = {VEC_BLOCK * sizeof(int)},
                            .elements = VEC_BLOCK};
}

static int send_mixed(int per_sender)
{
    int errors = 0;
    for (int i = 0; i < per_sender; ++i) {
        size_t len = size_of(t_rank, i), mis = (size_t) (i % 8);
        uint8_t *buf = t_alloc(len, mis, GUARD);
        t_fill(buf, len, t_rank, i);
        T_CHECK_MPI(MPI_Send(buf, (int) len, MPI_BYTE, 0, i, MPI_COMM_WORLD));
        errors += t_check(buf, len, t_rank, i, "send buffer after the send");
        errors += t_check_guards(buf, len, GUARD, "send buffer");
        t_free(buf, mis, GUARD);
    }
    return errors;
}

static int receive_mixed(int per_sender)
{
    size_t max = 2 * T_MiB + 9;
    uint8_t *buf = t_alloc(max, 5, GUARD);
    int *next = calloc((size_t) t_size, sizeof(int));
    int errors = 0;

    for (int n = 0; n < per_sender * (t_size - 1); ++n) {
        MPI_Status st;
        int count;
        char what[96];
        T_CHECK_MPI(MPI_Recv(buf, (int) max, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                             MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_BYTE, &count);
        int src = st.MPI_SOURCE, tag = st.MPI_TAG;
        if (src <= 0 || src >= t_size) {
            fprintf(stderr, "anysource: status names impossible source %d\n", src);
            errors++;
            memset(buf, T_POISON, max);
            continue;
        }
        if (tag != next[src]) {
            fprintf(stderr, "anysource: from rank %d got message %d, expected %d (overtaken)\n",
                    src, tag, next[src]);
            errors++;
        }
        next[src] = tag + 1;
        if (count < 0 || (size_t) count != size_of(src, tag)) {
            fprintf(stderr, "anysource: message %d from %d has count %d, expected %zu\n", tag,
                    src, count, size_of(src, tag));
            errors++;
            memset(buf, T_POISON, max);
            continue;
        }
        snprintf(what, sizeof(what), "ANY_SOURCE message %d from rank %d", tag, src);
        errors += t_check(buf, (size_t) count, src, tag, what);
        /* nothing past the message may change: the rest of the buffer and the guards */
        size_t past = max - (size_t) count < GUARD ? max - (size_t) count : GUARD;
        errors += t_check_poison(buf + count, past, what);
        errors += t_check_guards(buf, max, GUARD, what);
        memset(buf, T_POISON, (size_t) count);
    }
    free(next);
    t_free(buf, 5, GUARD);
    return errors;
}

/* Each sender: every vector size once, alternately from a typed buffer and as contiguous
 * ints (the type signatures match), all in flight at once. */
static int send_vectors(void)
{
    uint8_t *bufs[NVEC];
    size_t lens[NVEC];
    MPI_Request reqs[NVEC];
    MPI_Datatype vec[NVEC];
    int errors = 0;

    for (int k = 0; k < NVEC; ++k) {
        struct t_shape sh = vec_shape(k);
        int typed = (t_rank + k) % 2 == 0;
        lens[k] = typed ? t_shape_span(&sh) : t_shape_bytes(&sh);
        bufs[k] = t_alloc(lens[k], (size_t) k + 1, GUARD);
        if (typed) {
            uint8_t *scratch = malloc(t_shape_bytes(&sh));
            t_shape_expect(&sh, bufs[k], scratch, t_rank, VEC_TAG + k);
            free(scratch);
            T_CHECK_MPI(MPI_Type_vector(vec_reps[k], VEC_BLOCK, VEC_STRIDE, MPI_INT, &vec[k]));
            T_CHECK_MPI(MPI_Type_commit(&vec[k]));
            T_CHECK_MPI(MPI_Isend(bufs[k], 1, vec[k], 0, VEC_TAG + k, MPI_COMM_WORLD, &reqs[k]));
        } else {
            vec[k] = MPI_DATATYPE_NULL;
            t_fill(bufs[k], lens[k], t_rank, VEC_TAG + k);
            T_CHECK_MPI(MPI_Isend(bufs[k], vec_reps[k] * VEC_BLOCK, MPI_INT, 0, VEC_TAG + k,
                                  MPI_COMM_WORLD, &reqs[k]));
        }
    }
    T_CHECK_MPI(MPI_Waitall(NVEC, reqs, MPI_STATUSES_IGNORE));
    for (int k = 0; k < NVEC; ++k) {
        if (MPI_DATATYPE_NULL != vec[k]) {
            struct t_shape sh = vec_shape(k);
            uint8_t *want = malloc(lens[k]), *scratch = malloc(t_shape_bytes(&sh));
            t_shape_expect(&sh, want, scratch, t_rank, VEC_TAG + k);
            errors += t_check_equal(bufs[k], want, lens[k], "typed send buffer after the send");
            free(want);
            free(scratch);
        } else {
            errors += t_check(bufs[k], lens[k], t_rank, VEC_TAG + k,
                              "send buffer after the send");
        }
        errors += t_check_guards(bufs[k], lens[k], GUARD, "vector send buffer");
        t_free(bufs[k], (size_t) k + 1, GUARD);
        if (MPI_DATATYPE_NULL != vec[k]) {
            MPI_Type_free(&vec[k]);
        }
    }
    return errors;
}

/* Rank 0: the largest vectors first, each from whichever sender matches. */
static int receive_vectors(void)
{
    int errors = 0;
    int *seen = calloc((size_t) t_size, sizeof(int));

    for (int k = NVEC - 1; k >= 0; --k) {
        struct t_shape sh = vec_shape(k);
        size_t span = t_shape_span(&sh);
        uint8_t *want = malloc(span), *scratch = malloc(t_shape_bytes(&sh));
        MPI_Datatype vec;
        T_CHECK_MPI(MPI_Type_vector(vec_reps[k], VEC_BLOCK, VEC_STRIDE, MPI_INT, &vec));
        T_CHECK_MPI(MPI_Type_commit(&vec));
        for (int n = 1; n < t_size; ++n) {
            uint8_t *buf = t_alloc(span, 3, GUARD);
            MPI_Status st;
            int count = -1, nelem = -1;
            char what[128];
            T_CHECK_MPI(MPI_Recv(buf, 1, vec, MPI_ANY_SOURCE, VEC_TAG + k, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, vec, &count);
            MPI_Get_elements(&st, vec, &nelem); /* basic elements: ints */
            int src = st.MPI_SOURCE;
            snprintf(what, sizeof(what), "ANY_SOURCE vector of %d x %d ints from rank %d",
                     vec_reps[k], VEC_BLOCK, src);
            if (src <= 0 || src >= t_size || seen[src] != NVEC - 1 - k ||
                st.MPI_TAG != VEC_TAG + k || count != 1 || nelem != vec_reps[k] * VEC_BLOCK) {
                fprintf(stderr, "anysource: %s: status says tag %d, count %d, %d ints; "
                        "expected a first one from this rank, tag %d, 1, %d\n", what,
                        st.MPI_TAG, count, nelem, VEC_TAG + k, vec_reps[k] * VEC_BLOCK);
                errors++;
            } else {
                seen[src]++;
                t_shape_expect(&sh, want, scratch, src, VEC_TAG + k);
                errors += t_check_equal(buf, want, span, what);
            }
            errors += t_check_guards(buf, span, GUARD, what);
            t_free(buf, 3, GUARD);
        }
        MPI_Type_free(&vec);
        free(want);
        free(scratch);
    }
    free(seen);
    return errors;
}

int main(int argc, char **argv)
{
    int errors = 0;

    t_init(&argc, &argv, "anysource");
    t_inject_rank = 0; /* the only rank that receives */
    int per_sender = t_quick ? NMIXED : 3 * NMIXED;

    errors += 0 == t_rank ? receive_mixed(per_sender) : send_mixed(per_sender);
    /* the first part's wildcard receives must not see the second part's messages */
    T_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    errors += 0 == t_rank ? receive_vectors() : send_vectors();
    return t_finish(errors);
}
