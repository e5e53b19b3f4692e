/*
 * A buffer freed and reallocated between two sends (same address, new memory, new
 * contents) must deliver the new bytes, never the old ones: this is what a stale
 * registration cache gets wrong. Three ways to reuse an address: malloc/free of large
 * blocks (made to go through mmap/munmap), new pages mapped over the old ones at the same
 * address, and a buffer simply rewritten between sends; and one rewritten between sends
 * but read-only while it is sent (mprotect: a registration that peers may write cannot
 * pin it for writing, and each mprotect changes the mapping under a registration that
 * holds its pages). Ranks 0 -> 1; other ranks idle.
 *
 * The mmap case replaces the buffer's pages in one step (MAP_FIXED over the live range:
 * the kernel unmaps the old pages and maps new ones, with no moment at which another
 * thread of the process, Open MPI's or PMIx's, could take the range), and counts an error
 * in every round after the first that does not keep the address. For malloc/free reuse is likely but up to the
 * allocator and the kernel, so only "at least once per size" is required (see sender()).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static const size_t reuse_sizes[] = {4097, 65536 + 7, 1 * T_MiB, 4 * T_MiB + 3};
#define NREUSE ((int) (sizeof(reuse_sizes) / sizeof(reuse_sizes[0])))

enum reuse { REUSE_MALLOC, REUSE_MMAP, REUSE_REWRITE, REUSE_READONLY };
static const char *reuse_names[] = {"malloc/free", "mmap over", "rewrite",
                                    "read-only while sent"};
/* mallopt took the mmap threshold: the allocator is glibc's (not a sanitizer's, say) */
static int threshold_set;

/* New anonymous memory: anywhere when 'at' is NULL, else in place of the mapping of 'len'
 * bytes at 'at' (MAP_FIXED replaces it whole). */
static uint8_t *map_fresh(void *at, size_t len)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0);
    uint8_t *p = mmap(at, len, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (MAP_FAILED == p) {
        perror("realloc: mmap");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Rank 0 sends 'rounds' messages from a buffer it replaces before each one; *reused says
 * in how many rounds after the first the address was the previous one. Returns the number
 * of errors: an mmap-over round that did not keep the address.
 *
 * malloc/free: with the mmap threshold fixed at 4 KiB (which also stops glibc from
 * raising it after the first free), blocks that do not fit the heap's top chunk (here
 * those of 64 KiB and more) are mmapped and unmapped again by free, and the kernel gives
 * the next malloc the range just freed, as the allocator gives back a heap block of the
 * same size. Neither is promised, so a round without reuse is not an error; main() only
 * requires each size to reuse the address at least once, and only of glibc's allocator
 * (another one, such as a sanitizer's, may never reuse an address soon). */
static int sender(enum reuse how, size_t len, int rounds, int base_msg, int *reused)
{
    uint8_t *buf = NULL, *prev = NULL;
    int errors = 0;
    *reused = 0;
#ifdef M_MMAP_THRESHOLD
    if (REUSE_MALLOC == how) {
        threshold_set = 1 == mallopt(M_MMAP_THRESHOLD, 4096);
    }
#endif
    for (int r = 0; r < rounds; ++r) {
        if (REUSE_MALLOC == how) {
            free(buf);
            buf = malloc(len);
        } else if (REUSE_MMAP == how) {
            buf = map_fresh(prev, len);
            if (prev && buf != prev) {
                fprintf(stderr, "realloc: mmap over %zu bytes, round %d: got %p, not the "
                        "replaced %p\n", len, r, (void *) buf, (void *) prev);
                errors++;
            }
        } else if (REUSE_READONLY == how) {
            if (!buf) {
                buf = map_fresh(NULL, len);
            } else if (mprotect(buf, len, PROT_READ | PROT_WRITE)) {
                perror("realloc: mprotect");
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        } else if (!buf) {
            buf = malloc(len);
        }
        if (!buf) {
            fprintf(stderr, "realloc: out of memory (%zu bytes)\n", len);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        *reused += (buf == prev);
        prev = buf;
        t_fill(buf, len, 0, base_msg + r);
        if (REUSE_READONLY == how && mprotect(buf, len, PROT_READ)) {
            perror("realloc: mprotect");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        T_CHECK_MPI(MPI_Send(buf, (int) len, MPI_BYTE, 1, base_msg + r, MPI_COMM_WORLD));
    }
    if (REUSE_MMAP == how || REUSE_READONLY == how) {
        munmap(buf, len);
    } else {
        free(buf);
    }
#ifdef M_MMAP_THRESHOLD
    if (REUSE_MALLOC == how) {
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    }
#endif
    return errors;
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
    for (int how = REUSE_MALLOC; how <= REUSE_READONLY; ++how) {
        for (int s = 0; s < NREUSE; ++s) {
            if (0 == t_rank) {
                int reused;
                errors += sender(how, reuse_sizes[s], rounds, msg, &reused);
                if (REUSE_MALLOC == how && 0 == reused && threshold_set) {
                    fprintf(stderr, "realloc: malloc/free of %zu bytes never reused the "
                            "address: the case tested nothing\n", reuse_sizes[s]);
                    errors++;
                }
                if (REUSE_MALLOC == how || REUSE_MMAP == how) {
                    printf("realloc: %s of %zu bytes reused the same address %d of %d times\n",
                           reuse_names[how], reuse_sizes[s], reused, rounds - 1);
                }
            } else if (1 == t_rank) {
                errors += receiver(how, reuse_sizes[s], rounds, msg);
            }
            msg += rounds;
        }
    }
    return t_finish(errors);
}
