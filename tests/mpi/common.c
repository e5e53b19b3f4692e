/*
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int t_rank, t_size, t_quick, t_inject_rank = 1;
static const char *t_program;
/* SMX_TEST_INJECT_FAULT=1 corrupts the first buffer checked on rank t_inject_rank, to
 * prove the checks can fail. */
static int t_inject_fault;

void t_init_thread(int *argc, char ***argv, const char *program, int required)
{
    const char *q = getenv("SMX_TEST_QUICK");
    const char *f = getenv("SMX_TEST_INJECT_FAULT");
    int provided = MPI_THREAD_SINGLE;

    if (required < 0) {
        MPI_Init(argc, argv);
    } else {
        MPI_Init_thread(argc, argv, required, &provided);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
    t_program = program;
    t_quick = q && atoi(q) > 0;
    t_inject_fault = f && atoi(f) > 0;
    if (t_size < 2) {
        if (0 == t_rank) {
            fprintf(stderr, "%s: needs at least 2 ranks\n", program);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (required >= 0 && provided < required) {
        if (0 == t_rank) {
            fprintf(stderr, "%s: thread level %d required, %d provided\n", program, required,
                    provided);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

void t_init(int *argc, char ***argv, const char *program)
{
    t_init_thread(argc, argv, program, -1);
}

int t_finish(int local_errors)
{
    int errors = 0;

    MPI_Allreduce(&local_errors, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == t_rank) {
        printf("%s: %s (%d ranks, %d error%s)\n", t_program, errors ? "FAIL" : "PASS", t_size,
               errors, 1 == errors ? "" : "s");
        fflush(stdout);
    }
    MPI_Finalize();
    return errors ? 1 : 0;
}

uint8_t t_pattern(int sender, int msg, size_t offset)
{
    /* A cheap mix: neighbouring offsets, messages and senders all differ. */
    uint32_t x = (uint32_t) offset * 2654435761u ^ (uint32_t) msg * 40503u
                 ^ (uint32_t) sender * 2246822519u;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    return (uint8_t) x;
}

void t_fill(void *buf, size_t len, int sender, int msg)
{
    uint8_t *b = buf;
    for (size_t i = 0; i < len; ++i) {
        b[i] = t_pattern(sender, msg, i);
    }
}

static void t_maybe_inject(void *buf, size_t len)
{
    if (t_inject_fault && t_inject_rank == t_rank && len > 0) {
        ((uint8_t *) buf)[len / 2] ^= 0x40;
        t_inject_fault = 0;
    }
}

int t_check(const void *buf, size_t len, int sender, int msg, const char *what)
{
    const uint8_t *b = buf;
    t_maybe_inject((void *) buf, len);
    for (size_t i = 0; i < len; ++i) {
        uint8_t want = t_pattern(sender, msg, i);
        if (b[i] != want) {
            fprintf(stderr,
                    "%s: rank %d: %s: %zu bytes from rank %d (message %d): byte %zu is 0x%02x, "
                    "expected 0x%02x\n",
                    t_program, t_rank, what, len, sender, msg, i, b[i], want);
            return 1;
        }
    }
    return 0;
}

int t_check_poison(const void *buf, size_t len, const char *what)
{
    const uint8_t *b = buf;
    for (size_t i = 0; i < len; ++i) {
        if (T_POISON != b[i]) {
            fprintf(stderr, "%s: rank %d: %s: byte %zu outside the message was overwritten (0x%02x)\n",
                    t_program, t_rank, what, i, b[i]);
            return 1;
        }
    }
    return 0;
}

int t_check_equal(const void *got, const void *want, size_t len, const char *what)
{
    const uint8_t *g = got, *w = want;
    t_maybe_inject((void *) got, len);
    for (size_t i = 0; i < len; ++i) {
        if (g[i] != w[i]) {
            fprintf(stderr, "%s: rank %d: %s: byte %zu of %zu is 0x%02x, expected 0x%02x\n",
                    t_program, t_rank, what, i, len, g[i], w[i]);
            return 1;
        }
    }
    return 0;
}

int t_check_guards(const void *buf, size_t len, size_t guard, const char *what)
{
    const uint8_t *lead = (const uint8_t *) buf - guard, *trail = (const uint8_t *) buf + len;
    for (size_t i = 0; i < guard; ++i) {
        if (T_POISON != lead[i]) {
            fprintf(stderr,
                    "%s: rank %d: %s: guard byte %zu before the %zu-byte buffer was overwritten "
                    "(0x%02x)\n",
                    t_program, t_rank, what, guard - i, len, lead[i]);
            return 1;
        }
    }
    for (size_t i = 0; i < guard; ++i) {
        if (T_POISON != trail[i]) {
            fprintf(stderr,
                    "%s: rank %d: %s: guard byte %zu past the end of the %zu-byte buffer was "
                    "overwritten (0x%02x)\n",
                    t_program, t_rank, what, i, len, trail[i]);
            return 1;
        }
    }
    return 0;
}

void *t_alloc(size_t len, size_t misalign, size_t guard)
{
    uint8_t *base = NULL;
    if (0 != posix_memalign((void **) &base, 64, len + misalign + 2 * guard + 64)) {
        fprintf(stderr, "%s: rank %d: out of memory (%zu bytes)\n", t_program, t_rank, len);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* Keep the user pointer misaligned relative to 64 bytes even with a guard. */
    size_t lead = (guard + 63) / 64 * 64 + misalign;
    memset(base, T_POISON, len + misalign + 2 * guard + 64);
    return base + lead;
}

void t_free(void *p, size_t misalign, size_t guard)
{
    size_t lead = (guard + 63) / 64 * 64 + misalign;
    free((uint8_t *) p - lead);
}

const size_t *t_sizes(int *count)
{
    static const size_t sizes[] = {
        0, 1, 3, 7, 8, 33, 34, 35, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025,
        4095, 4096, 4097, 8191, 8192, 8193, 16383, 16385, 32767, 32768, 32769,
        65535, 65536, 65537, 131071, 131073, 262147, 524288, 1048573,
        T_MiB + 3, 4 * T_MiB - 1, 4 * T_MiB + 5, 16 * T_MiB,
    };
    *count = (int) (sizeof(sizes) / sizeof(sizes[0]));
    return sizes;
}

size_t t_shape_bytes(const struct t_shape *s)
{
    size_t one = 0;
    for (int b = 0; b < s->nblocks; ++b) {
        one += s->len[b];
    }
    return s->reps * one + s->tail;
}

size_t t_shape_span(const struct t_shape *s)
{
    size_t end = 0;
    if (s->reps > 0) {
        for (int b = 0; b < s->nblocks; ++b) {
            size_t e = (s->reps - 1) * s->extent + s->off[b] + s->len[b];
            end = e > end ? e : end;
        }
    }
    if (s->tail > 0 && s->reps * s->extent + s->tail > end) {
        end = s->reps * s->extent + s->tail;
    }
    return end;
}

long t_shape_elements(const struct t_shape *s)
{
    return (long) s->reps * s->elements + s->tail_elements;
}

void t_shape_scatter(const struct t_shape *s, void *typed, const void *packed)
{
    uint8_t *t = typed;
    const uint8_t *p = packed;
    for (size_t r = 0; r < s->reps; ++r) {
        for (int b = 0; b < s->nblocks; ++b) {
            memcpy(t + r * s->extent + s->off[b], p, s->len[b]);
            p += s->len[b];
        }
    }
    memcpy(t + s->reps * s->extent, p, s->tail);
}

void t_shape_expect(const struct t_shape *s, void *typed, void *scratch, int sender, int msg)
{
    t_fill(scratch, t_shape_bytes(s), sender, msg);
    memset(typed, T_POISON, t_shape_span(s));
    t_shape_scatter(s, typed, scratch);
}
