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

/* Buffer of len bytes starting 'misalign' bytes after a 64-byte boundary, with 'guard'
 * poisoned bytes on both sides; free with t_free(ptr, misalign, guard). */
void *t_alloc(size_t len, size_t misalign, size_t guard);
void t_free(void *p, size_t misalign, size_t guard);

/* The message sizes every point-to-point test walks: 0 B to 16 MiB, odd sizes, and
 * both sides of the usual eager / rendezvous / fragment boundaries. */
const size_t *t_sizes(int *count);

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
