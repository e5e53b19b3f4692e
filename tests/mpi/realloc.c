/*
 * A buffer freed and reallocated between two sends (same address, new memory, new
 * contents) must deliver the new bytes, never the old ones: this is what a stale
 * registration cache gets wrong. Three ways to reuse an address: malloc/free of large
 * blocks (glibc maps and unmaps them), munmap + mmap at the same address, and a buffer
 * simply rewritten between sends. Ranks 0 -> 1; other ranks idle.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static const size_t reuse_sizes[] = {4097, 65536 + 7, 1 * T_MiB, 4 * T_MiB + 3};
#define NREUSE ((int) (sizeof(reuse_sizes) / sizeof(reuse_sizes[0])))

enum reuse { REUSE_MALLOC, REUSE_MMAP, REUSE_REWRITE };
static const char *reuse_names[] = {"malloc/free", "munmap/mmap", "rewrite"};

static uint8_t *map_at(void *hint, size_t len)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_FIXED_NOREPLACE
    if (hint) {
        flags |= MAP_FIXED_NOREPLACE;
    }
#endif
    uint8_t *p = mmap(hint, len, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (MAP_FAILED == p) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (MAP_FAILED == p) {
        perror("realloc: mmap");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Rank 0 sends 'rounds' messages from a buffer it replaces before each one. Returns how
 * many times the address was really reused, for the report. */
static int sender(enum reuse how, size_t len, int rounds, int base_msg)
{
    uint8_t *buf = NULL, *prev = NULL;
    int reused = 0;
    for (int r = 0; r < rounds; ++r) {
        if (REUSE_MALLOC == how) {
            free(buf);
            buf = malloc(len);
        } else if (REUSE_MMAP == how) {
            if (buf) {
                munmap(buf, len);
            }
            buf = map_at(prev, len);
        } else if (!buf) {
            buf = malloc(len);
        }
        reused += (buf == prev);
        prev = buf;
        t_fill(buf, len, 0, base_msg + r);
        T_CHECK_MPI(MPI_Send(buf, (int) len, MPI_BYTE, 1, base_msg + r, MPI_COMM_WORLD));
    }
    if (REUSE_MMAP == how) {
        munmap(buf, len);
    } else {
        free(buf);
    }
    return reused;
}

static int receiver(enum reuse how, size_t len, int rounds, int base_msg)
{
    uint8_t *buf = malloc(len);
    int errors = 0;
    for (int r = 0; r < rounds; ++r) {
        char what[96];
        T_CHECK_MPI(MPI_Recv(buf, (int) len, MPI_BYTE, 0, base_msg + r, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE));
        snprintf(what, sizeof(what), "%s, %zu bytes, round %d (old contents delivered?)",
                 reuse_names[how], len, r);
        errors += t_check(buf, len, 0, base_msg + r, what);
    }
    free(buf);
    return errors;
}

int main(int argc, char **argv)
{
    int errors = 0, msg = 0;
    t_init(&argc, &argv, "realloc");
    int rounds = t_quick ? 3 : 8;
    for (int how = REUSE_MALLOC; how <= REUSE_REWRITE; ++how) {
        for (int s = 0; s < NREUSE; ++s) {
            if (0 == t_rank) {
                int reused = sender(how, reuse_sizes[s], rounds, msg);
                if (REUSE_REWRITE != how && s == NREUSE - 1) {
                    printf("realloc: %s reused the same address %d of %d times\n",
                           reuse_names[how], reused, rounds - 1);
                }
            } else if (1 == t_rank) {
                errors += receiver(how, reuse_sizes[s], rounds, msg);
            }
            msg += rounds;
        }
    }
    return t_finish(errors);
}
