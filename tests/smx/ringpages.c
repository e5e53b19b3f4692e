/*
 * How much of its own btl/smx segment a sender has in memory after a few small
 * messages to one peer: rank 0 sends COUNT 8-byte messages to rank 1 (enough for a pair
 * ring, btl_smx_pair_ring_after), then reads the resident size of its segment's mapping
 * from /proc/self/smaps (the file /dev/shm/smx.<job>.<vpid>.<pid>, unlinked by then).
 * btl/smx writes every page of a ring when it makes it, so the ring's whole size is
 * resident, not only the lines the small messages used. Prints
 *   ringpages: rank 0: segment resident <kB> kB
 * and "ringpages: PASS" once every message arrived intact.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COUNT 64

/* Rss (kB) of the mapping of this process's own segment; -1 if there is none. */
static long own_segment_rss(int vpid)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[1024], suffix[64];
    long rss = -1;
    int in_segment = 0;

    if (NULL == f) {
        return -1;
    }
    snprintf(suffix, sizeof(suffix), ".%d.%d", vpid, (int) getpid());
    while (NULL != fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char path[512] = "";

        if (2 <= sscanf(line, "%lx-%lx %*s %*s %*s %*s %511s", &lo, &hi, path)) {
            /* a mapping's first line: is it my segment (a name ending in my suffix)? */
            const char *name = strrchr(path, '/');
            const size_t n = NULL != name ? strlen(name) : 0, k = strlen(suffix);
            in_segment = n > k && 0 == strncmp(name, "/smx.", 5)
                         && 0 == strcmp(name + n - k, suffix);
            continue;
        }
        long kb;
        if (in_segment && 1 == sscanf(line, "Rss: %ld kB", &kb)) {
            rss = (rss < 0 ? 0 : rss) + kb;
        }
    }
    fclose(f);
    return rss;
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (2 != size) {
        if (0 == rank) {
            fprintf(stderr, "ringpages: run with 2 ranks\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < COUNT; ++i) {
        long long v = 1000003LL * i + 7;
        if (0 == rank) {
            MPI_Send(&v, 1, MPI_LONG_LONG, 1, i, MPI_COMM_WORLD);
        } else {
            long long got = -1;
            MPI_Recv(&got, 1, MPI_LONG_LONG, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad += got != v;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("ringpages: rank 0: segment resident %ld kB\n", own_segment_rss(0));
        fflush(stdout);
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("ringpages: %s\n", 0 == bad ? "PASS" : "FAIL (messages corrupted)");
    }
    MPI_Finalize();
    return 0 == bad ? 0 : 1;
}
