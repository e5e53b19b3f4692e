/*
 * Shared helpers of the MPI data-verification programs: a data pattern that depends on
 * (sender, message, offset), so misrouted, stale, reordered or shifted bytes are caught;
 * poison checks for bytes the transport must not touch; the verdict across ranks.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef SMX_TEST_COMMON_H
#define SMX_TEST_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define T_POISON 0xA5
#define T_MiB (1024 * 1024)

extern int t_rank, t_size;
/* SMX_TEST_QUICK=1: fewer repetitions and offsets, same categories and largest size. */
extern int t_quick;
/* SMX_TEST_INJECT_FAULT=1 corrupts the first non-empty buffer checked on this rank
 * (default 1); a program where rank 1 receives nothing names a rank that does. */
extern int t_inject_rank;

void t_init(int *argc, char ***argv, const char *program);
/* The same with MPI_Init_thread; aborts unless 'required' is provided. */
void t_init_thread(int *argc, char ***argv, const char *program, int required);
/* Collective verdict: prints PASS/FAIL on rank 0, finalizes, returns the exit status. */
int t_finish(int local_errors);

uint8_t t_pattern(int sender, int msg, size_t offset);
void t_fill(void *buf, size_t len, int sender, int msg);
/* Number of mismatches (0 or 1: reports the first); 'what' names the case. */
int t_check(const void *buf, size_t len, int sender, int msg, const char *what);
/* Bytes [0, len) must still hold T_POISON. */
int t_check_poison(const void *buf, size_t len, const char *what);
/* Compare two buffers byte for byte. */
int t_check_equal(const void *got, const void *want, size_t len, const char *what);

/* The 'guard' bytes just before buf and just after buf + len must still hold T_POISON
 * (a buffer from t_alloc with the same guard); reports the first bad side. */
int t_check_guards(const void *buf, size_t len, size_t guard, const char *what);

/* Buffer of len bytes starting 'misalign' bytes after a 64-byte boundary, with 'guard'
 * poisoned bytes on both sides; free with t_free(ptr, misalign, guard). */
void *t_alloc(size_t len, size_t misalign, size_t guard);
void t_free(void *p, size_t misalign, size_t guard);

/* The message sizes every point-to-point test walks: 0 B to 16 MiB, odd sizes, and
 * both sides of the usual eager / rendezvous / fragment boundaries. */
const size_t *t_sizes(int *count);

/* The byte layout of a derived datatype written out by hand, so the expected contents of
 * a typed buffer never come from the convertor under test: 'reps' elements 'extent' bytes
 * apart, each made of 'nblocks' blocks (offset in the element, length in bytes) in type
 * map order, then 'tail' bytes at reps * extent. 'elements' counts the basic elements of
 * one element, for MPI_Get_elements. */
#define T_SHAPE_MAXBLOCKS 8
struct t_shape {
    size_t reps, extent, tail;
    int nblocks;
    size_t off[T_SHAPE_MAXBLOCKS], len[T_SHAPE_MAXBLOCKS];
    int elements, tail_elements;
};
/* Bytes of data (the packed size). */
size_t t_shape_bytes(const struct t_shape *s);
/* Bytes from the first to the last byte the layout touches (offsets start at 0). */
size_t t_shape_span(const struct t_shape *s);
/* Basic elements in all, for MPI_Get_elements. */
long t_shape_elements(const struct t_shape *s);
/* Copy packed byte k to its place in the typed buffer; the holes are left as they are. */
void t_shape_scatter(const struct t_shape *s, void *typed, const void *packed);
/* The typed buffer of t_shape_span(s) bytes that sender's message msg must produce: the
 * pattern in the blocks, T_POISON in the holes. 'scratch' holds t_shape_bytes(s) bytes. */
void t_shape_expect(const struct t_shape *s, void *typed, void *scratch, int sender, int msg);

#define T_CHECK_MPI(call)                                                             \
    do {                                                                              \
        int t_rc_ = (call);                                                           \
        if (MPI_SUCCESS != t_rc_) {                                                   \
            fprintf(stderr, "rank %d: %s failed (%d) at %s:%d\n", t_rank, #call,      \
                    t_rc_, __FILE__, __LINE__);                                       \
            MPI_Abort(MPI_COMM_WORLD, 2);                                             \
        }                                                                             \
    } while (0)

#endif
