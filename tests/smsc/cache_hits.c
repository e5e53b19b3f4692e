/*
 * The registration cache works inside a real MPI job: rank 0 sends the same buffer many
 * times (large enough for the single-copy path), then reads smsc/knemlike's performance
 * variables through MPI_T. Almost every send after the first must be a cache hit. Then a
 * buffer whose pages are replaced by new ones at the same address between sends must deliver
 * its new contents (the cache hit on a recycled address is correct by construction: the
 * module copies through the owner's current mapping). Every round fills the buffer with a
 * pattern that depends on the position and the round, and the receiver checks every byte,
 * so a stale page, a page from the old mapping or shifted data shows. With --expect-attach
 * the receiver must have copied through one mapping of the sender's registration
 * (smsc_knemlike_attaches, attach_hits): the remapped rounds then also show that the
 * mapping follows the sender's new pages. With --expect-map, a buffer of 8 KiB, which stock
 * btl/sm sends in place when the component can map peers' memory (CAN_MAP), goes the same
 * rounds: the receiver must have read it through one mapping of the sender's export
 * (smsc_knemlike_maps, map_hits), also once the sender's pages were replaced.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LEN (1 << 20)
#define SMALL (8 << 10) /* above btl/sm's inline size, within its eager limit under CAN_MAP */
#define ROUNDS 20
#define REMAPS 4


/* MPI_T counters count from the moment their handle is bound: bind before the sends. */
struct counter {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
};

static void counter_start(struct counter *c, const char *name)
{
    int index, count;
    if (MPI_SUCCESS != MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &index)) {
        fprintf(stderr, "cache_hits: performance variable %s not found\n", name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_T_pvar_session_create(&c->session);
    MPI_T_pvar_handle_alloc(c->session, index, NULL, &c->handle, &count);
}

static unsigned long long counter_read(struct counter *c)
{
    unsigned long long value = 0;
    MPI_T_pvar_read(c->session, c->handle, &value);
    MPI_T_pvar_handle_free(c->session, &c->handle);
    MPI_T_pvar_session_free(&c->session);
    return value;
}

/* Byte i of the buffer in round r, a hash of both: no page of one round equals the same
 * page of another round, a zero page, or a page of any round at another offset. */
static uint8_t pattern(size_t i, int r)
{
    uint32_t x = (uint32_t) i * 2654435761u + (uint32_t) (r + 1) * 0x9e3779b9u;
    x ^= x >> 13;
    x *= 0x85ebca6bu;
    return (uint8_t) (x >> 24);
}

static void fill(uint8_t *buf, size_t len, int r)
{
    for (size_t i = 0; i < len; ++i) {
        buf[i] = pattern(i, r);
    }
}

/* The number of wrong bytes; the first few are named. */
static int verify(const uint8_t *buf, size_t len, int r)
{
    int wrong = 0;
    for (size_t i = 0; i < len; ++i) {
        if (buf[i] != pattern(i, r) && wrong++ < 3) {
            fprintf(stderr, "cache_hits: round %d: byte %zu is 0x%02x, expected 0x%02x\n", r,
                    i, buf[i], pattern(i, r));
        }
    }
    return wrong;
}

static uint8_t *map_buffer(void *where, size_t len, int flags)
{
    void *p = mmap(where, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1,
                   0);
    if (MAP_FAILED == p) {
        perror("cache_hits: mmap");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Fresh memory in place of the buffer, at the same address; aborts if that fails (then the
 * test would no longer test a recycled address). */
static uint8_t *remap_same_address(uint8_t *buf, size_t len)
{
    /* MAP_FIXED over the live range: the old pages go and new ones come in one step, so no
     * other thread of the process (Open MPI's, PMIx's) can take the range in between. */
    void *again = mmap(buf, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                       -1, 0);
    if (again != (void *) buf) {
        fprintf(stderr, "cache_hits: FAIL: cannot map new pages over the buffer at %p: %s\n",
                (void *) buf, MAP_FAILED == again ? strerror(errno) : "another address");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return again;
}

/* ROUNDS sends of one buffer of len bytes from rank 0 to rank 1, then REMAPS more with new
 * pages mapped at its address before each; the receiver checks every byte. Returns the
 * rounds received wrong. */
static int send_rounds(int rank, uint8_t **buf, size_t len)
{
    int errors = 0;
    for (int r = 0; r < ROUNDS + REMAPS; ++r) {
        if (r >= ROUNDS) {
            *buf = remap_same_address(*buf, len); /* same address, new pages, new data */
        }
        if (0 == rank) {
            fill(*buf, len, r);
            MPI_Send(*buf, len, MPI_BYTE, 1, r, MPI_COMM_WORLD);
        } else if (1 == rank) {
            MPI_Recv(*buf, len, MPI_BYTE, 0, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            errors += 0 != verify(*buf, len, r);
        }
    }
    return errors;
}

int main(int argc, char **argv)
{
    int rank, provided, errors = 0;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int expect_attach = 0, expect_map = 0;
    for (int i = 1; i < argc; ++i) {
        expect_attach |= 0 == strcmp(argv[i], "--expect-attach");
        expect_map |= 0 == strcmp(argv[i], "--expect-map");
    }
    struct counter hits_counter, misses_counter, attach_hits_counter, attaches_counter;
    counter_start(&hits_counter, "smsc_knemlike_cache_hits");
    counter_start(&misses_counter, "smsc_knemlike_cache_misses");
    counter_start(&attach_hits_counter, "smsc_knemlike_attach_hits");
    counter_start(&attaches_counter, "smsc_knemlike_attaches");

    uint8_t *buf = map_buffer(NULL, LEN, 0);
    errors += send_rounds(rank, &buf, LEN);
    if (0 == rank) {
        unsigned long long hits = counter_read(&hits_counter);
        unsigned long long misses = counter_read(&misses_counter);
        printf("cache_hits: rank 0: %llu hits, %llu misses over %d sends of one buffer and %d "
               "remapped at its address\n", hits, misses, ROUNDS, REMAPS);
        if (misses > 3 || hits < ROUNDS - 2) {
            fprintf(stderr, "cache_hits: FAIL: a buffer sent again was registered again\n");
            errors++;
        }
    }
    if (0 != rank) {
        counter_read(&hits_counter);
        counter_read(&misses_counter);
    }
    unsigned long long attach_hits = counter_read(&attach_hits_counter);
    unsigned long long attaches = counter_read(&attaches_counter);
    if (1 == rank) {
        printf("cache_hits: rank 1: %llu copies through %llu mapping(s) of rank 0's "
               "registrations\n", attach_hits, attaches);
        if (expect_attach && (attaches < 1 || attaches > 3 || attach_hits < ROUNDS - 2)) {
            fprintf(stderr, "cache_hits: FAIL: expected the copies through one mapping\n");
            errors++;
        }
    }
    if (expect_map) {
        struct counter map_hits_counter, maps_counter;
        counter_start(&map_hits_counter, "smsc_knemlike_map_hits");
        counter_start(&maps_counter, "smsc_knemlike_maps");
        uint8_t *small = map_buffer(NULL, SMALL, 0);
        errors += send_rounds(rank, &small, SMALL);
        unsigned long long map_hits = counter_read(&map_hits_counter);
        unsigned long long maps = counter_read(&maps_counter);
        if (1 == rank) {
            printf("cache_hits: rank 1: %d sends of %d bytes read through %llu mapping(s) of "
                   "rank 0's memory, %llu of them through one made before\n", ROUNDS + REMAPS,
                   SMALL, maps, map_hits);
            if (maps < 1 || maps > 3 || map_hits < ROUNDS - 2) {
                fprintf(stderr, "cache_hits: FAIL: expected the small sends read through one "
                        "mapping of the sender's memory\n");
                errors++;
            }
        }
        munmap(small, SMALL);
    }
    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("cache_hits: %s\n", total ? "FAIL" : "PASS");
    }
    munmap(buf, LEN);
    MPI_Finalize();
    MPI_T_finalize();
    return total ? 1 : 0;
}
