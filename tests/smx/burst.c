/*
 * A burst of sends to a receiver that is not receiving yet: rank 0 posts N nonblocking
 * sends of LEN bytes to rank 1, which sleeps a second before it receives them all. Rank 0
 * prints how much its peak resident memory grew while it posted them (kB, from VmHWM:
 * what a sender buffers for messages its peer's ring has no room for) and btl/smx's
 * performance variables btl_smx_sends_queued and btl_smx_frags_peak read through MPI_T
 * (-1: not found); rank 1 checks every byte of every message, and that they arrive in
 * order.
 *
 *   burst N LEN
 *
 * Output: "burst: rank 0: N sends of LEN bytes: peak memory +K kB" and "burst: PASS" or
 * "burst: FAIL ...". Used by tests/check-smx-memory.sh.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pvar.h"

static long peak_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;

    if (NULL == f) {
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        if (0 == strncmp(line, "VmHWM:", 6)) {
            kb = atol(line + 6);
        }
    }
    fclose(f);
    return kb;
}

static uint8_t byte_of(int msg, size_t i)
{
    return (uint8_t) ((size_t) msg * 131u + i * 7u + (i >> 8));
}

int main(int argc, char **argv)
{
    int rank, size, errors = 0;

    int provided;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || size != 2 || atoi(argv[1]) < 1 || atol(argv[2]) < 1) {
        if (0 == rank) {
            fprintf(stderr, "usage: mpirun -np 2 burst N LEN\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int n = atoi(argv[1]);
    size_t len = (size_t) atol(argv[2]);
    /* One buffer for all messages, written (and so resident) before the baseline. */
    uint8_t *buf = malloc((size_t) n * len);
    MPI_Request *req = malloc(sizeof(*req) * (size_t) n);
    if (NULL == buf || NULL == req) {
        fprintf(stderr, "burst: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int m = 0; m < n; ++m) {
        for (size_t i = 0; i < len; ++i) {
            buf[(size_t) m * len + i] = 0 == rank ? byte_of(m, i) : 0;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* bound before the burst, read after the last send of rank 0 (the Allreduce below):
     * then the counter and the total printed at finalize cover the same sends */
    struct pvar queued, peak;
    if (0 == rank) {
        pvar_bind(&queued, "btl_smx_sends_queued", MPI_T_PVAR_CLASS_COUNTER);
        pvar_bind(&peak, "btl_smx_frags_peak", MPI_T_PVAR_CLASS_HIGHWATERMARK);
        long before = peak_kb();
        for (int m = 0; m < n; ++m) {
            MPI_Isend(buf + (size_t) m * len, (int) len, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &req[m]);
        }
        long grown = peak_kb() - before;
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        printf("burst: rank 0: %d sends of %zu bytes: peak memory +%ld kB\n", n, len, grown);
    } else {
        sleep(1);
        for (int m = 0; m < n; ++m) {
            MPI_Recv(buf + (size_t) m * len, (int) len, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        }
        for (int m = 0; m < n && errors < 5; ++m) {
            for (size_t i = 0; i < len; ++i) {
                if (buf[(size_t) m * len + i] != byte_of(m, i)) {
                    fprintf(stderr, "burst: FAIL: message %d, byte %zu is 0x%02x, expected 0x%02x\n",
                            m, i, buf[(size_t) m * len + i], byte_of(m, i));
                    errors++;
                    break;
                }
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("burst: rank 0: MPI_T: btl_smx_sends_queued %lld, btl_smx_frags_peak %lld\n",
               pvar_take(&queued), pvar_take(&peak));
        if (0 == errors) {
            printf("burst: PASS\n");
        } else {
            printf("burst: FAIL (%d messages wrong)\n", errors);
        }
    }
    free(req);
    free(buf);
    MPI_T_finalize();
    MPI_Finalize();
    return 0 == errors ? 0 : 1;
}
