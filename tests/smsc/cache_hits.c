/*
 * The registration cache works inside a real MPI job: rank 0 sends the same buffer many
 * times (large enough for the single-copy path), then reads smsc/knemlike's performance
 * variables through MPI_T. Almost every send after the first must be a cache hit. Then a
 * buffer freed and reallocated at the same address between sends must still deliver its
 * new contents (the cache hit on a recycled address is correct by construction).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN (1 << 20)
#define ROUNDS 20

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

int main(int argc, char **argv)
{
    int rank, provided, errors = 0;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct counter hits_counter, misses_counter;
    counter_start(&hits_counter, "smsc_knemlike_cache_hits");
    counter_start(&misses_counter, "smsc_knemlike_cache_misses");

    uint8_t *buf = malloc(LEN);
    for (int r = 0; r < ROUNDS; ++r) {
        if (0 == rank) {
            memset(buf, r + 1, LEN);
            MPI_Send(buf, LEN, MPI_BYTE, 1, r, MPI_COMM_WORLD);
        } else if (1 == rank) {
            MPI_Recv(buf, LEN, MPI_BYTE, 0, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            errors += buf[0] != r + 1 || buf[LEN - 1] != r + 1;
        }
    }
    /* Free and reallocate between sends: same address (glibc maps large blocks), new data. */
    for (int r = 0; r < 4; ++r) {
        free(buf);
        buf = malloc(LEN);
        if (0 == rank) {
            memset(buf, 0x40 + r, LEN);
            MPI_Send(buf, LEN, MPI_BYTE, 1, 100 + r, MPI_COMM_WORLD);
        } else if (1 == rank) {
            MPI_Recv(buf, LEN, MPI_BYTE, 0, 100 + r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            errors += buf[0] != 0x40 + r || buf[LEN / 2] != 0x40 + r;
        }
    }
    if (0 == rank) {
        unsigned long long hits = counter_read(&hits_counter);
        unsigned long long misses = counter_read(&misses_counter);
        printf("cache_hits: rank 0: %llu hits, %llu misses over %d sends of one buffer and 4 "
               "reallocated ones\n", hits, misses, ROUNDS);
        if (misses > 3 || hits < ROUNDS - 2) {
            fprintf(stderr, "cache_hits: FAIL: a buffer sent again was registered again\n");
            errors++;
        }
    }
    if (0 != rank) {
        counter_read(&hits_counter);
        counter_read(&misses_counter);
    }
    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("cache_hits: %s\n", total ? "FAIL" : "PASS");
    }
    free(buf);
    MPI_Finalize();
    MPI_T_finalize();
    return total ? 1 : 0;
}
