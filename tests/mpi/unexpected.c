/*
 * Unexpected messages: every rank but 0 starts a burst of sends of mixed sizes to rank 0
 * before rank 0 has posted anything (a barrier orders it), so the small ones wait in the
 * unexpected queue and the large ones as pending rendezvous. Rank 0 then drains them,
 * first per sender in reverse rank order, then with MPI_ANY_SOURCE; data, counts and
 * per-sender order are checked. Two more bursts use odd sizes on both sides of 4 KiB and
 * 32 KiB and just over 1 MiB: one of non-contiguous messages (a strided type on the send
 * side, the receive side or both; drained in reverse order per sender, every byte of the
 * typed buffer checked against its layout written out by hand), one of contiguous
 * messages from and into buffers at odd offsets (drained with MPI_ANY_SOURCE). In those
 * the guard bytes around every buffer, send buffers included, must stay poisoned.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

static const size_t burst_sizes[] = {1, 8, 100, 1000, 4000, 8193, 40000, 70001, 1 * T_MiB + 1};
#define NBURST ((int) (sizeof(burst_sizes) / sizeof(burst_sizes[0])))
#define MAXLEN (1 * T_MiB + 1)

/* the non-contiguous and unaligned bursts */
static const size_t odd_sizes[] = {4093, 4099, 34813, 34821, 1 * T_MiB + 7};
#define NODD ((int) (sizeof(odd_sizes) / sizeof(odd_sizes[0])))
#define GUARD 64
/* strided type: blocks of 7 bytes 12 apart, then what is left of the size */
#define BLK 7
#define STRIDE 12

enum kind { NONCONTIG, UNALIGNED };

/* One message of the non-contiguous or the unaligned burst. */
struct umsg {
    size_t len; /* bytes of data */
    int send_typed, recv_typed;
    size_t send_mis, recv_mis;
    struct t_shape shape;
};

static struct umsg describe(enum kind kind, int i)
{
    struct umsg m = {.len = odd_sizes[i % NODD]};
    int round = i / NODD;
    if (NONCONTIG == kind) {
        /* typed -> typed, contiguous -> typed, then typed -> contiguous */
        m.send_typed = 1 != round % 3;
        m.recv_typed = 2 != round % 3;
    } else {
        m.send_mis = 1 + (size_t) (i % 7);
        m.recv_mis = 7 - (size_t) (i % 7);
    }
    m.shape = (struct t_shape){.reps = m.len / BLK, .extent = STRIDE, .nblocks = 1,
                               .off = {0}, .len = {BLK}, .elements = BLK,
                               .tail = m.len % BLK, .tail_elements = (int) (m.len % BLK)};
    return m;
}

/* The MPI type of the shape: a vector of full blocks, then the rest as bytes. */
static MPI_Datatype make_type(const struct t_shape *sh)
{
    MPI_Datatype vec, t;
    T_CHECK_MPI(MPI_Type_vector((int) sh->reps, BLK, STRIDE, MPI_BYTE, &vec));
    if (0 == sh->tail) {
        t = vec;
    } else {
        int lens[] = {1, (int) sh->tail};
        MPI_Aint disp[] = {0, (MPI_Aint) (sh->reps * STRIDE)};
        MPI_Datatype types[] = {vec, MPI_BYTE};
        T_CHECK_MPI(MPI_Type_create_struct(2, lens, disp, types, &t));
        MPI_Type_free(&vec);
    }
    T_CHECK_MPI(MPI_Type_commit(&t));
    return t;
}

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

/* The pattern of the message, in its typed layout or contiguous. */
static void fill_msg(const struct umsg *m, int typed, uint8_t *buf, int sender, int msg)
{
    if (typed) {
        uint8_t *scratch = malloc(m->len);
        t_shape_expect(&m->shape, buf, scratch, sender, msg);
        free(scratch);
    } else {
        t_fill(buf, m->len, sender, msg);
    }
}

/* Whether buf holds the message in its typed layout (holes poisoned) or contiguous. */
static int check_msg(const struct umsg *m, int typed, const uint8_t *buf, int sender, int msg,
                     const char *what)
{
    int errors = 0;
    if (typed) {
        size_t span = t_shape_span(&m->shape);
        uint8_t *want = malloc(span);
        fill_msg(m, 1, want, sender, msg);
        errors += t_check_equal(buf, want, span, what);
        free(want);
        errors += t_check_guards(buf, span, GUARD, what);
    } else {
        errors += t_check(buf, m->len, sender, msg, what);
        errors += t_check_guards(buf, m->len, GUARD, what);
    }
    return errors;
}

static int receive_shaped(enum kind kind, int src, int i, int phase)
{
    struct umsg m = describe(kind, i);
    int msg = phase * 1000 + i, count = -1, nelem = -1, errors = 0;
    size_t blen = m.recv_typed ? t_shape_span(&m.shape) : m.len;
    uint8_t *buf = t_alloc(blen, m.recv_mis, GUARD);
    MPI_Datatype type = m.recv_typed ? make_type(&m.shape) : MPI_BYTE;
    int rcount = m.recv_typed ? 1 : (int) m.len;
    MPI_Status st;
    char what[128];

    T_CHECK_MPI(MPI_Recv(buf, rcount, type, src, msg, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, type, &count);
    MPI_Get_elements(&st, type, &nelem);
    snprintf(what, sizeof(what), "unexpected %s message %d (%zu bytes%s%s) from rank %d",
             NONCONTIG == kind ? "non-contiguous" : "unaligned", msg, m.len,
             m.send_typed ? ", typed send" : "", m.recv_typed ? ", typed receive" : "", src);
    if (st.MPI_SOURCE != src || st.MPI_TAG != msg || count != rcount ||
        nelem != t_shape_elements(&m.shape)) {
        fprintf(stderr, "unexpected: %s: status says rank %d, tag %d, count %d, %d elements; "
                "expected count %d, %ld elements\n", what, st.MPI_SOURCE, st.MPI_TAG, count,
                nelem, rcount, t_shape_elements(&m.shape));
        errors++;
    }
    errors += check_msg(&m, m.recv_typed, buf, src, msg, what);
    if (m.recv_typed) {
        MPI_Type_free(&type);
    }
    t_free(buf, m.recv_mis, GUARD);
    return errors;
}

/* The non-contiguous or the unaligned burst: drained per sender in reverse order of the
 * messages (non-contiguous) or with MPI_ANY_SOURCE in arrival order (unaligned). */
static int burst_shaped(enum kind kind, int phase, int nmsg)
{
    int errors = 0;
    if (0 != t_rank) {
        uint8_t **bufs = calloc((size_t) nmsg, sizeof(*bufs));
        MPI_Datatype *types = calloc((size_t) nmsg, sizeof(*types));
        MPI_Request *reqs = calloc((size_t) nmsg, sizeof(*reqs));
        for (int i = 0; i < nmsg; ++i) {
            struct umsg m = describe(kind, i);
            int msg = phase * 1000 + i;
            size_t blen = m.send_typed ? t_shape_span(&m.shape) : m.len;
            bufs[i] = t_alloc(blen, m.send_mis, GUARD);
            fill_msg(&m, m.send_typed, bufs[i], t_rank, msg);
            types[i] = m.send_typed ? make_type(&m.shape) : MPI_BYTE;
            T_CHECK_MPI(MPI_Isend(bufs[i], m.send_typed ? 1 : (int) m.len, types[i], 0, msg,
                                  MPI_COMM_WORLD, &reqs[i]));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        T_CHECK_MPI(MPI_Waitall(nmsg, reqs, MPI_STATUSES_IGNORE));
        for (int i = 0; i < nmsg; ++i) {
            struct umsg m = describe(kind, i);
            errors += check_msg(&m, m.send_typed, bufs[i], t_rank, phase * 1000 + i,
                                "send buffer after an unexpected send");
            if (m.send_typed) {
                MPI_Type_free(&types[i]);
            }
            t_free(bufs[i], m.send_mis, GUARD);
        }
        free(bufs);
        free(types);
        free(reqs);
    } else {
        MPI_Barrier(MPI_COMM_WORLD); /* every burst is in flight before any receive */
        if (NONCONTIG == kind) {
            for (int src = t_size - 1; src > 0; --src) {
                for (int i = nmsg - 1; i >= 0; --i) {
                    errors += receive_shaped(kind, src, i, phase);
                }
            }
        } else {
            int *next = calloc((size_t) t_size, sizeof(int));
            for (int n = 0; n < nmsg * (t_size - 1); ++n) {
                MPI_Status st;
                T_CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                int src = st.MPI_SOURCE, i = next[src]++;
                if (st.MPI_TAG != phase * 1000 + i) {
                    fprintf(stderr, "unexpected: probe found tag %d from rank %d, expected %d\n",
                            st.MPI_TAG, src, phase * 1000 + i);
                    errors++;
                    i = st.MPI_TAG - phase * 1000;
                    next[src] = i + 1;
                    if (i < 0 || i >= nmsg) { /* not one of this burst's: drop it */
                        int count = 0;
                        MPI_Get_count(&st, MPI_BYTE, &count);
                        uint8_t *junk = malloc((size_t) count + 1);
                        T_CHECK_MPI(MPI_Recv(junk, count, MPI_BYTE, src, st.MPI_TAG,
                                             MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                        free(junk);
                        continue;
                    }
                }
                errors += receive_shaped(kind, src, i, phase);
            }
            free(next);
        }
    }
    return errors;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "unexpected");
    t_inject_rank = 0; /* the only rank that receives */
    int nmsg = t_quick ? 2 * NBURST : 6 * NBURST;
    /* quick: typed -> typed and contiguous -> typed at every size; else also
     * typed -> contiguous */
    int nodd = t_quick ? 2 * NODD : 3 * NODD;
    int errors = burst(0, nmsg);
    errors += burst(1, nmsg);
    /* a sender done with burst 1 must not start the next one while rank 0 still probes
     * burst 1 with MPI_ANY_SOURCE and MPI_ANY_TAG */
    MPI_Barrier(MPI_COMM_WORLD);
    errors += burst_shaped(NONCONTIG, 2, nodd);
    errors += burst_shaped(UNALIGNED, 3, nodd);
    return t_finish(errors);
}
