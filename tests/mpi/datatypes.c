/*
 * Non-contiguous derived datatypes (vector, hvector, indexed, struct with holes, resized),
 * small and over 1 MiB, on the send side, the receive side and both. The expected layout
 * comes from MPI_Pack/MPI_Unpack run locally, so the check covers every byte of the
 * receive buffer: the type's bytes must hold the data and its holes must stay poisoned.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

    MPI_Type_vector(64 * scale, 3, 7, MPI_INT, &t);
    c[n++] = (struct typecase){"vector(3 of 7 ints)", t, 1};
    MPI_Type_create_hvector(32 * scale, 5, 13, MPI_BYTE, &t);
    c[n++] = (struct typecase){"hvector(5 of 13 bytes)", t, 1};
    MPI_Type_indexed(5, blens, displs, MPI_DOUBLE, &idx);
    MPI_Type_create_resized(idx, 0, 32 * sizeof(double), &t);
    MPI_Type_free(&idx);
    c[n++] = (struct typecase){"resized indexed doubles", t, 16 * scale};
    c[n++] = (struct typecase){"struct with holes", make_struct(), 100 * scale};
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

/* Sender builds the typed buffer from the pattern; the receiver derives the same. */
static void fill_typed(void *typed, size_t span, MPI_Datatype type, int count, int sender,
                       int msg, void *packed, int packed_size)
{
    int pos = 0;
    t_fill(packed, (size_t) packed_size, sender, msg);
    memset(typed, T_POISON, span);
    MPI_Unpack(packed, packed_size, &pos, typed, count, type, MPI_COMM_SELF);
}

/* mode 0: typed -> contiguous, 1: contiguous -> typed, 2: typed -> typed */
static int run_case(const struct typecase *c, int mode, int msg)
{
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    int packed_size, errors = 0;
    size_t span = span_of(c->type, c->count);
    char what[128];

    MPI_Pack_size(c->count, c->type, MPI_COMM_SELF, &packed_size);
    /* MPI_Pack_size may round up; the real packed size is count * type size. */
    int tsize;
    MPI_Type_size(c->type, &tsize);
    packed_size = tsize * c->count;

    uint8_t *packed = malloc((size_t) packed_size + 1);
    uint8_t *send_typed = malloc(span + 1), *recv_typed = malloc(span + 1);
    uint8_t *want_typed = malloc(span + 1), *contig = malloc((size_t) packed_size + 1);
    const char *modes[] = {"typed->contiguous", "contiguous->typed", "typed->typed"};
    snprintf(what, sizeof(what), "%s x%d (%d bytes of data), %s", c->name, c->count,
             packed_size, modes[mode]);

    fill_typed(send_typed, span, c->type, c->count, t_rank, msg, packed, packed_size);
    memcpy(contig, packed, (size_t) packed_size);
    memset(recv_typed, T_POISON, span);

    void *sbuf = mode == 1 ? (void *) contig : (void *) send_typed;
    int scount = mode == 1 ? packed_size : c->count;
    MPI_Datatype stype = mode == 1 ? MPI_BYTE : c->type;
    uint8_t *rcontig = malloc((size_t) packed_size + 1);
    void *rbuf = mode == 0 ? (void *) rcontig : (void *) recv_typed;
    int rcount = mode == 0 ? packed_size : c->count;
    MPI_Datatype rtype = mode == 0 ? MPI_BYTE : c->type;

    T_CHECK_MPI(MPI_Sendrecv(sbuf, scount, stype, right, msg, rbuf, rcount, rtype, left, msg,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    if (0 == mode) {
        errors += t_check(rcontig, (size_t) packed_size, left, msg, what);
    } else {
        fill_typed(want_typed, span, c->type, c->count, left, msg, packed, packed_size);
        errors += t_check_equal(recv_typed, want_typed, span, what);
    }
    free(packed);
    free(send_typed);
    free(recv_typed);
    free(want_typed);
    free(contig);
    free(rcontig);
    return errors;
}

int main(int argc, char **argv)
{
    struct typecase cases[8];
    int errors = 0, msg = 0;

    t_init(&argc, &argv, "datatypes");
    for (int large = 0; large <= 1; ++large) {
        int n = build_cases(cases, large);
        for (int i = 0; i < n; ++i) {
            for (int mode = 0; mode < 3; ++mode) {
                errors += run_case(&cases[i], mode, msg++);
            }
            MPI_Type_free(&cases[i].type);
        }
    }
    return t_finish(errors);
}
