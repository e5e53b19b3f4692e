/*
 * Non-contiguous derived datatypes (vector, hvector, indexed, struct with holes, resized),
 * small and over 1 MiB, on the send side, the receive side and both, with the typed and
 * contiguous buffers aligned and at odd offsets. Every case also has its byte layout
 * written out by hand (struct t_shape), and that is the reference: the sender's typed
 * buffer is built from it and the receiver compares every byte of its typed buffer with
 * it (the type's bytes must hold the data, its holes must stay poisoned), so a convertor
 * bug cannot hide by being the same on both sides. The poisoned guard bytes around every
 * buffer, the send buffers and the receive status (source, tag, count, elements) are
 * checked too. A local MPI_Pack/MPI_Unpack against the hand-built layout tells a
 * convertor bug from a transport one.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 64

struct holey {
    char c;
    double d;
    int i;
    short s;
};

struct typecase {
    const char *name;
    MPI_Datatype type;
    int count;
    struct t_shape shape; /* (type, count) written out by hand: the reference */
};

static MPI_Datatype make_struct(void)
{
    int lens[] = {1, 1, 1, 1};
    MPI_Aint disp[] = {offsetof(struct holey, c), offsetof(struct holey, d),
                       offsetof(struct holey, i), offsetof(struct holey, s)};
    MPI_Datatype types[] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT}, t, r;
    MPI_Type_create_struct(4, lens, disp, types, &t);
    MPI_Type_create_resized(t, 0, sizeof(struct holey), &r);
    MPI_Type_free(&t);
    return r;
}

static int build_cases(struct typecase *c, int large)
{
    int n = 0, scale = large ? 1536 : 1;
    MPI_Datatype t, idx;
    int blens[] = {1, 3, 2, 7, 1};
    int displs[] = {0, 2, 9, 13, 25};

    /* vector: element i, int j of the block is packed int i * 3 + j, typed int i * 7 + j */
    MPI_Type_vector(64 * scale, 3, 7, MPI_INT, &t);
    c[n++] = (struct typecase){"vector(3 of 7 ints)", t, 1,
                               {.reps = (size_t) (64 * scale), .extent = 7 * sizeof(int),
                                .nblocks = 1, .off = {0}, .len = {3 * sizeof(int)},
                                .elements = 3}};
    MPI_Type_create_hvector(32 * scale, 5, 13, MPI_BYTE, &t);
    c[n++] = (struct typecase){"hvector(5 of 13 bytes)", t, 1,
                               {.reps = (size_t) (32 * scale), .extent = 13, .nblocks = 1,
                                .off = {0}, .len = {5}, .elements = 5}};
    MPI_Type_indexed(5, blens, displs, MPI_DOUBLE, &idx);
    MPI_Type_create_resized(idx, 0, 32 * sizeof(double), &t);
    MPI_Type_free(&idx);
    c[n] = (struct typecase){"resized indexed doubles", t, 16 * scale,
                             {.reps = (size_t) (16 * scale), .extent = 32 * sizeof(double),
                              .nblocks = 5, .elements = 0}};
    for (int b = 0; b < 5; ++b) {
        c[n].shape.off[b] = (size_t) displs[b] * sizeof(double);
        c[n].shape.len[b] = (size_t) blens[b] * sizeof(double);
        c[n].shape.elements += blens[b];
    }
    n++;
    c[n++] = (struct typecase){"struct with holes", make_struct(), 100 * scale,
                               {.reps = (size_t) (100 * scale), .extent = sizeof(struct holey),
                                .nblocks = 4,
                                .off = {offsetof(struct holey, c), offsetof(struct holey, d),
                                        offsetof(struct holey, i), offsetof(struct holey, s)},
                                .len = {sizeof(char), sizeof(double), sizeof(int),
                                        sizeof(short)},
                                .elements = 4}};
    for (int i = 0; i < n; ++i) {
        MPI_Type_commit(&c[i].type);
    }
    return n;
}

/* Size in bytes of the buffer a (type, count) spans, from its true extent. */
static size_t span_of(MPI_Datatype type, int count)
{
    MPI_Aint lb, extent, tlb, textent;
    MPI_Type_get_extent(type, &lb, &extent);
    MPI_Type_get_true_extent(type, &tlb, &textent);
    return (size_t) ((count - 1) * extent + tlb + textent);
}

static int first_difference(const uint8_t *got, const uint8_t *want, size_t len)
{
    for (size_t i = 0; i < len; ++i) {
        if (got[i] != want[i]) {
            return (int) i;
        }
    }
    return -1;
}

/* The hand-built layout must agree with MPI about the type's size and span, and the local
 * convertor (MPI_Pack, MPI_Unpack) with the layout: if only this fails, the bug is in the
 * datatype engine rather than in the transport. */
static int check_local(const struct typecase *c)
{
    const struct t_shape *sh = &c->shape;
    size_t bytes = t_shape_bytes(sh), span = t_shape_span(sh);
    int tsize, pos = 0, errors = 0, at;

    MPI_Type_size(c->type, &tsize);
    if ((size_t) tsize * (size_t) c->count != bytes || span_of(c->type, c->count) != span) {
        fprintf(stderr,
                "datatypes: rank %d: %s x%d: MPI says %zu bytes over %zu, the hand-built "
                "layout %zu over %zu\n",
                t_rank, c->name, c->count, (size_t) tsize * (size_t) c->count,
                span_of(c->type, c->count), bytes, span);
        return 1;
    }
    uint8_t *packed = malloc(bytes + 1), *typed = malloc(span + 1);
    uint8_t *want = malloc(span + 1), *repacked = malloc(bytes + 1);
    t_shape_expect(sh, want, packed, t_rank, 0);
    memset(typed, T_POISON, span);
    MPI_Unpack(packed, (int) bytes, &pos, typed, c->count, c->type, MPI_COMM_SELF);
    if ((at = first_difference(typed, want, span)) >= 0) {
        fprintf(stderr, "datatypes: rank %d: %s x%d: local MPI_Unpack differs from the "
                "hand-built layout at typed byte %d\n", t_rank, c->name, c->count, at);
        errors++;
    }
    pos = 0;
    MPI_Pack(want, c->count, c->type, repacked, (int) bytes, &pos, MPI_COMM_SELF);
    if ((size_t) pos != bytes || (at = first_difference(repacked, packed, bytes)) >= 0) {
        fprintf(stderr, "datatypes: rank %d: %s x%d: local MPI_Pack of the hand-built layout "
                "differs from the data (%d of %zu bytes, first bad %d)\n", t_rank, c->name,
                c->count, pos, bytes, at);
        errors++;
    }
    free(packed);
    free(typed);
    free(want);
    free(repacked);
    return errors;
}

/* The receive status must name the sender and the tag and count the data in rtype. */
static int check_status(const MPI_Status *st, MPI_Datatype rtype, int rcount, long elements,
                        int src, int msg, const char *what)
{
    int count = -1, nelem = -1;
    MPI_Get_count(st, rtype, &count);
    MPI_Get_elements(st, rtype, &nelem);
    if (st->MPI_SOURCE != src || st->MPI_TAG != msg || count != rcount || nelem != elements) {
        fprintf(stderr,
                "datatypes: rank %d: %s: status says source %d, tag %d, count %d, %d elements; "
                "expected %d, %d, %d, %ld\n",
                t_rank, what, st->MPI_SOURCE, st->MPI_TAG, count, nelem, src, msg, rcount,
                elements);
        return 1;
    }
    return 0;
}

/* mode 0: typed -> contiguous, 1: contiguous -> typed, 2: typed -> typed; 'mis' offsets
 * the sender's and the receiver's buffers from a 64-byte boundary. */
static int run_case(const struct typecase *c, int mode, const size_t mis[2], int msg)
{
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size, errors = 0;
    const struct t_shape *sh = &c->shape;
    size_t bytes = t_shape_bytes(sh), span = t_shape_span(sh);
    const char *modes[] = {"typed->contiguous", "contiguous->typed", "typed->typed"};
    char what[160];
    MPI_Status st;

    snprintf(what, sizeof(what), "%s x%d (%zu bytes of data), %s, offsets %zu/%zu", c->name,
             c->count, bytes, modes[mode], mis[0], mis[1]);
    uint8_t *scratch = malloc(bytes + 1), *want = malloc(span + 1);
    uint8_t *send_typed = t_alloc(span, mis[0], GUARD), *contig = t_alloc(bytes, mis[0], GUARD);
    uint8_t *recv_typed = t_alloc(span, mis[1], GUARD), *rcontig = t_alloc(bytes, mis[1], GUARD);

    t_shape_expect(sh, send_typed, scratch, t_rank, msg);
    t_fill(contig, bytes, t_rank, msg);

    void *sbuf = mode == 1 ? (void *) contig : (void *) send_typed;
    int scount = mode == 1 ? (int) bytes : c->count;
    MPI_Datatype stype = mode == 1 ? MPI_BYTE : c->type;
    void *rbuf = mode == 0 ? (void *) rcontig : (void *) recv_typed;
    int rcount = mode == 0 ? (int) bytes : c->count;
    MPI_Datatype rtype = mode == 0 ? MPI_BYTE : c->type;

    T_CHECK_MPI(MPI_Sendrecv(sbuf, scount, stype, right, msg, rbuf, rcount, rtype, left, msg,
                             MPI_COMM_WORLD, &st));
    if (0 == mode) {
        errors += t_check(rcontig, bytes, left, msg, what);
        errors += t_check_guards(rcontig, bytes, GUARD, what);
    } else {
        t_shape_expect(sh, want, scratch, left, msg);
        errors += t_check_equal(recv_typed, want, span, what);
        errors += t_check_guards(recv_typed, span, GUARD, what);
    }
    errors += check_status(&st, rtype, rcount, 0 == mode ? (long) bytes : t_shape_elements(sh),
                           left, msg, what);
    /* The send buffer and the bytes around it must come back unchanged. */
    if (1 == mode) {
        errors += t_check(contig, bytes, t_rank, msg, "contiguous send buffer after the send");
        errors += t_check_guards(contig, bytes, GUARD, "contiguous send buffer");
    } else {
        t_shape_expect(sh, want, scratch, t_rank, msg);
        errors += t_check_equal(send_typed, want, span, "typed send buffer after the send");
        errors += t_check_guards(send_typed, span, GUARD, "typed send buffer");
    }
    free(scratch);
    free(want);
    t_free(send_typed, mis[0], GUARD);
    t_free(contig, mis[0], GUARD);
    t_free(recv_typed, mis[1], GUARD);
    t_free(rcontig, mis[1], GUARD);
    return errors;
}

int main(int argc, char **argv)
{
    /* aligned, then both sides at (different) odd offsets from a 64-byte boundary */
    static const size_t offsets[][2] = {{0, 0}, {3, 5}};
    struct typecase cases[8];
    int errors = 0, msg = 0;

    t_init(&argc, &argv, "datatypes");
    for (int large = 0; large <= 1; ++large) {
        int n = build_cases(cases, large);
        for (int i = 0; i < n; ++i) {
            errors += check_local(&cases[i]);
            for (int a = 0; a < 2; ++a) {
                for (int mode = 0; mode < 3; ++mode, ++msg) {
                    /* quick: the large types aligned only typed -> typed */
                    if (t_quick && large && 0 == a && 2 != mode) {
                        continue;
                    }
                    errors += run_case(&cases[i], mode, offsets[a], msg);
                }
            }
            MPI_Type_free(&cases[i].type);
        }
    }
    return t_finish(errors);
}
